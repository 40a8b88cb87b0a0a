// The dashboard's entry point: a hash router (#/ is the runs list,
// #/runs/{id} a run, #/runs/{id}/prompt-runs its model calls) and the API
// key prompt.

import { apiKey, onAuthNeeded, POLL_MS, setAPIKey } from './api.js';
import { runsView } from './runs.js';
import { runView } from './run.js';

const main = document.getElementById('main');
const liveEl = document.getElementById('live');
const keyButton = document.getElementById('key-button');
const keyDialog = document.getElementById('key-dialog');
const keyForm = document.getElementById('key-form');
const keyInput = document.getElementById('key-input');
const keyError = document.getElementById('key-error');

let view = null;

const MODES = {
  live: 'live',
  reconnecting: 'reconnecting…',
  polling: `updating every ${POLL_MS / 1000} s`,
};

function setMode(mode) {
  liveEl.dataset.mode = mode;
  liveEl.textContent = MODES[mode] || '';
}

// route parses the hash: {name: "runs", query} or {name: "run", id, tab}.
function route() {
  const hash = location.hash.replace(/^#/, '') || '/';
  const [path, qs] = hash.split('?');
  const m = /^\/runs\/([^/]+)(?:\/(prompt-runs))?$/.exec(path);
  if (m) return { name: 'run', id: decodeURIComponent(m[1]), tab: m[2] || 'steps' };
  return { name: 'runs', query: new URLSearchParams(qs || '') };
}

function render() {
  const r = route();
  if (r.name === 'run' && view?.runId === r.id) {
    view.setTab(r.tab);
    return;
  }
  view?.dispose();
  view = r.name === 'run' ? runView(r.id, r.tab) : runsView(r.query, { setMode });
  main.replaceChildren(view.el);
  document.title = r.name === 'run' ? 'Run · Wayfinder' : 'Runs · Wayfinder';
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
