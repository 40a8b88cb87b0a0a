// The dashboard's entry point: a hash router (#/ is the runs list,
// #/runs/{id} a run, #/runs/{id}/prompt-runs its model calls,
// #/suite-runs the suite runs, #/suite-runs/{id} one, #/traces the
// replayable traces, #/traces/{id} one), the header's sections and the
// API key prompt.

import { apiKey, onAuthNeeded, POLL_MS, setAPIKey } from './api.js';
import { h } from './dom.js';
import { runsView } from './runs.js';
import { runView } from './run.js';
import { suiteRunsView, suiteRunView } from './suites.js';
import { tracesView, traceView } from './traces.js';

const main = document.getElementById('main');
const liveEl = document.getElementById('live');
const keyButton = document.getElementById('key-button');
const keyDialog = document.getElementById('key-dialog');
const keyForm = document.getElementById('key-form');
const keyInput = document.getElementById('key-input');
const keyError = document.getElementById('key-error');

let view = null;

// The header's sections, after the brand.
const sections = h('nav', { class: 'sections', 'aria-label': 'Sections' },
  h('a', { href: '#/', dataset: { section: 'runs' }, text: 'Runs' }),
  h('a', { href: '#/suite-runs', dataset: { section: 'suites' }, text: 'Suites' }),
  h('a', { href: '#/traces', dataset: { section: 'traces' }, text: 'Traces' }));
document.querySelector('header.top .brand').after(sections);

const TITLES = {
  runs: 'Runs', run: 'Run', 'suite-runs': 'Suite runs', 'suite-run': 'Suite run', traces: 'Traces', trace: 'Trace',
};

const MODES = {
  live: 'live',
  reconnecting: 'reconnecting…',
  polling: `updating every ${POLL_MS / 1000} s`,
};

function setMode(mode) {
  liveEl.dataset.mode = mode;
  liveEl.textContent = MODES[mode] || '';
}

// route parses the hash: {name: "runs", query}, {name: "run", id, tab},
// {name: "suite-runs", query}, {name: "suite-run", id}, {name: "traces",
// query} or {name: "trace", id}.
function route() {
  const hash = location.hash.replace(/^#/, '') || '/';
  const [path, qs] = hash.split('?');
  const m = /^\/runs\/([^/]+)(?:\/(prompt-runs))?$/.exec(path);
  if (m) return { name: 'run', id: decodeURIComponent(m[1]), tab: m[2] || 'steps' };
  const s = /^\/suite-runs(?:\/([^/]+))?\/?$/.exec(path);
  if (s?.[1]) return { name: 'suite-run', id: decodeURIComponent(s[1]) };
  if (s) return { name: 'suite-runs', query: new URLSearchParams(qs || '') };
  const tr = /^\/traces(?:\/([^/]+))?\/?$/.exec(path);
  if (tr?.[1]) return { name: 'trace', id: decodeURIComponent(tr[1]) };
  if (tr) return { name: 'traces', query: new URLSearchParams(qs || '') };
  return { name: 'runs', query: new URLSearchParams(qs || '') };
}

function render() {
  const r = route();
  if (r.name === 'run' && view?.runId === r.id) {
    view.setTab(r.tab);
    return;
  }
  view?.dispose();
  if (r.name === 'run') view = runView(r.id, r.tab);
  else if (r.name === 'suite-run') view = suiteRunView(r.id);
  else if (r.name === 'suite-runs') view = suiteRunsView(r.query, { setMode });
  else if (r.name === 'trace') view = traceView(r.id);
  else if (r.name === 'traces') view = tracesView(r.query, { setMode });
  else view = runsView(r.query, { setMode });
  main.replaceChildren(view.el);
  document.title = `${TITLES[r.name]} · Wayfinder`;
  const section = r.name.startsWith('suite') ? 'suites' : r.name.startsWith('trace') ? 'traces' : 'runs';
  for (const a of sections.children) a.setAttribute('aria-current', String(a.dataset.section === section));
}

// rerender starts the current view again (after the key changed).
function rerender() {
  view?.dispose();
  view = null;
  render();
}

function updateKeyButton() {
  keyButton.textContent = apiKey() ? 'Forget API key' : 'API key';
}

// askForKey opens the key prompt once, however many calls were refused.
function askForKey() {
  if (keyDialog.open) return;
  keyError.hidden = !apiKey();
  keyError.textContent = 'The server refused the key.';
  keyInput.value = '';
  keyDialog.showModal();
  keyInput.focus();
}

keyForm.addEventListener('submit', (e) => {
  e.preventDefault();
  const key = keyInput.value.trim();
  if (!key) return;
  setAPIKey(key);
  keyDialog.close();
  updateKeyButton();
  rerender();
});

document.getElementById('key-cancel').addEventListener('click', () => keyDialog.close());

keyButton.addEventListener('click', () => {
  if (apiKey()) {
    setAPIKey('');
    updateKeyButton();
    rerender();
  } else {
    askForKey();
  }
});

onAuthNeeded(askForKey);
window.addEventListener('hashchange', render);
updateKeyButton();
render();
