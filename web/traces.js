// Traces (record and replay): the tenant's replayable traces (#/traces,
// newest first, optionally only pinned ones or one task's) and one trace
// (#/traces/{id}): its recorded actions and final page, pinned, unpinned,
// exported and deleted from the page.

import { call, followAll, reportBug } from './api.js';
import {
  clipped, externalLink, fmtCost, fmtTime, fmtTokens, h, json, num, replace, timeMs,
} from './dom.js';
import { criteriaTable } from './run.js';
import { verdictLine } from './verdict.js';

const PAGE_SIZE = 50;

export const tracePath = (id) => `/v1/traces/${encodeURIComponent(id)}`;
export const traceHash = (id) => `#/traces/${encodeURIComponent(id)}`;
const runHash = (id) => `#/runs/${encodeURIComponent(id)}`;

// tracesHash is the location of the list: of one task's traces when task
// is set, of pinned traces only when pinned is.
export function tracesHash(task, pinned) {
  const q = new URLSearchParams();
  if (task) q.set('task', task);
  if (pinned) q.set('pinned', '1');
  const qs = q.toString();
  return qs ? `#/traces?${qs}` : '#/traces';
}

// shortKey is the start of a task key (a SHA-256 in hex), enough to tell
// tasks apart on screen.
const shortKey = (key) => String(key || '').slice(0, 12);

// taskLink filters the list to a task.
function taskLink(key, pinned) {
  return h('a', { class: 'task-key', href: tracesHash(key, pinned), title: `Traces of task ${key}` },
    h('code', { text: shortKey(key) }));
}

function pinnedBadge(pinned) {
  return h('span', { class: 'badge pinned', hidden: !pinned, text: 'pinned' });
}

function traceLink(id, text, cls = 'trace-link') {
  return h('a', { class: cls, href: traceHash(id), text: text || `trace ${String(id).slice(0, 8)}` });
}

// usageText is the model use a trace's recording cost: what a replay saves.
function usageText(u) {
  u = u || {};
  const tokens = num(u.input_tokens) + num(u.output_tokens);
  const calls = num(u.model_calls);
  return `${calls} model call${calls === 1 ? '' : 's'} · ${fmtTokens(tokens)} tokens` +
    (num(u.cost_usd) ? ` · ${fmtCost(u.cost_usd)}` : '');
}

// --- the list ----------------------------------------------------------------

// tracesView renders the list. query may name a task (task=…) and ask
// for pinned traces only (pinned=1); setMode shows how the list is kept
// live.
export function tracesView(query, { setMode }) {
  const task = (query.get('task') || '').trim();
  const pinnedOnly = query.get('pinned') === '1';
  const abort = new AbortController();
  const traces = new Map();
  let nextToken = '';

  const tbody = h('tbody');
  const message = h('p', { class: 'message', hidden: true });
  const more = h('button', { type: 'button', class: 'more', hidden: true, on: { click: () => fetchPage(PAGE_SIZE, nextToken) } }, 'Load more');
  const empty = h('p', { class: 'empty', hidden: true }, task || pinnedOnly
    ? 'No traces match these filters.'
    : 'No traces yet. Every completed run records one; a run with replay mode auto replays it.');

  const showError = (err) => {
    message.hidden = false;
    message.textContent = err.status === 401 ? 'An API key is needed.' : `Could not load the traces: ${err.message}`;
  };

  // Pages are fetched one at a time, in the order asked for: a reload
  // asked for during a fetch runs after it.
  let queue = Promise.resolve();
  const fetchPage = (size, token) => {
    queue = queue.then(() => fetchOne(size, token));
    return queue;
  };
  async function fetchOne(size, token) {
    if (abort.signal.aborted) return;
    const q = new URLSearchParams({ page_size: String(size) });
    if (task) q.set('task_key', task);
    if (pinnedOnly) q.set('pinned_only', 'true');
    if (token) q.set('page_token', token);
    try {
      const page = await call('GET', `/v1/traces?${q}`, undefined, abort.signal);
      if (!token) traces.clear();
      for (const t of page.traces || []) traces.set(t.id, t);
      nextToken = page.next_page_token || '';
      message.hidden = true;
      renderAll();
    } catch (err) {
      reportBug(err);
      if (!abort.signal.aborted) showError(err);
    }
  }

  const reload = () => fetchPage(Math.min(500, Math.max(PAGE_SIZE, traces.size)), '');

  // A completed run has recorded its trace by the time it says it ended.
  function onEvent(ev) {
    if (ev.type === 'RUN_EVENT_TYPE_FINISHED' && ev.run?.status === 'RUN_STATUS_COMPLETED') reload();
  }

  function row(t) {
    const href = traceHash(t.id);
    return h('tr', { dataset: { traceId: t.id, pinned: String(Boolean(t.pinned)) } },
      h('td', { class: 'goal-cell' },
        h('a', { class: 'goal', href, title: t.goal || '', text: t.goal || '' }),
        h('div', { class: 'meta' }, h('span', { class: 'start-url', text: t.start_url || '' }))),
      h('td', { class: 'task-cell' }, taskLink(t.task_key, pinnedOnly)),
      h('td', { class: 'num version', text: `v${num(t.version)}` }),
      h('td', { class: 'flags' }, pinnedBadge(t.pinned)),
      h('td', { class: 'healed' }, t.healed_from ? traceLink(t.healed_from, `trace ${t.healed_from.slice(0, 8)}`, 'healed-from') : null),
      h('td', { class: 'num actions-count', text: String(num(t.action_count)) }),
      h('td', { class: 'num recorded-usage', text: usageText(t.recorded_usage) }),
      h('td', { class: 'time', text: fmtTime(t.create_time) }),
      h('td', {}, h('a', { class: 'run-link', href: runHash(t.id), text: `run ${t.id.slice(0, 8)}` })));
  }

  function renderAll() {
    const sorted = [...traces.values()].sort((a, b) => (timeMs(b.create_time) ?? 0) - (timeMs(a.create_time) ?? 0));
    replace(tbody, sorted.map(row));
    empty.hidden = sorted.length > 0;
    more.hidden = !nextToken;
  }

  const chip = (label, on, href, filter) => h('a', {
    class: 'chip', href, 'aria-pressed': String(on), dataset: { filter }, text: label,
  });
  const filters = h('nav', { class: 'chips', 'aria-label': 'Trace filter' },
    chip('all', !pinnedOnly, tracesHash(task, false), 'all'),
    chip('pinned', pinnedOnly, tracesHash(task, true), 'pinned'),
    task ? h('a', { class: 'chip task-filter', href: tracesHash('', pinnedOnly), title: 'Show every task', 'aria-pressed': 'true' },
      'task ', h('code', { text: shortKey(task) }), ' ✕') : null);

  const el = h('section', { class: 'traces' },
    h('div', { class: 'filters' }, h('h1', { text: 'Traces' }), filters),
    message,
    h('table', { class: 'runs-table traces-table' },
      h('thead', {}, h('tr', {},
        ['Goal', 'Task', 'Version', 'Pinned', 'Healed from', 'Actions', 'Recorded model use', 'Created', 'Recorded by']
          .map((c) => h('th', { scope: 'col', text: c })))),
      tbody),
    empty, more);

  fetchPage(PAGE_SIZE, '');
  const stop = followAll({ event: onEvent, mode: setMode, resync: reload });

  return {
    el,
    dispose() {
      abort.abort();
      stop();
      setMode('');
    },
  };
}

// --- one trace ---------------------------------------------------------------

const FORMATS = {
  go: { format: 'TRACE_EXPORT_FORMAT_GO_TEST', label: 'Export Go test' },
  steps: { format: 'TRACE_EXPORT_FORMAT_STEPS', label: 'Export steps' },
};

// traceView renders trace id: its header, actions and final page, with
// Pin/Unpin, Export and Delete.
export function traceView(id) {
  const abort = new AbortController();
  const signal = abort.signal;
  let trace = null;

  // The title row stays (a button being clicked is never replaced); the
  // details below it are rebuilt on each change.
  const goal = h('h1', { class: 'goal' });
  const badge = pinnedBadge(false);
  const pinButton = h('button', { type: 'button', class: 'pin', on: { click: togglePin } }, 'Pin');
  const exportButtons = Object.entries(FORMATS).map(([name, f]) =>
    h('button', { type: 'button', class: 'export', dataset: { format: name }, on: { click: () => exportAs(name) } }, f.label));
  const deleteButton = h('button', { type: 'button', class: 'danger delete', on: { click: () => { confirmBar.hidden = false; } } }, 'Delete');
  const confirmBar = h('div', { class: 'confirm-delete', role: 'alertdialog', 'aria-label': 'Delete the trace', hidden: true },
    h('span', { text: 'Delete this trace? Replays of its task then use another one, or the model. The run that recorded it stays.' }),
    h('button', { type: 'button', class: 'danger confirm', on: { click: remove } }, 'Delete trace'),
    h('button', { type: 'button', class: 'quiet keep', on: { click: () => { confirmBar.hidden = true; } } }, 'Keep'));
  const details = h('div');
  const header = h('div', { class: 'run-header trace-header', hidden: true },
    h('div', { class: 'title-row' }, goal, badge, pinButton, exportButtons, deleteButton), confirmBar, details);
  const exportSlot = h('div', { class: 'export-slot' });
  const body = h('div', { class: 'trace-body' });
  const message = h('p', { class: 'message', hidden: true });
  const el = h('section', { class: 'trace', dataset: { traceId: id } },
    h('a', { class: 'back', href: tracesHash('', false), text: '← All traces' }),
    message, header, exportSlot, body);

  const showError = (text) => {
    message.hidden = !text;
    message.textContent = text || '';
  };

  const busy = (on) => {
    for (const b of header.querySelectorAll('button')) b.disabled = on;
  };

  function setTrace(t) {
    // PinTrace answers the trace without its actions: keep those shown.
    if (!t.actions && trace?.actions) t = { ...t, actions: trace.actions, final: t.final || trace.final };
    trace = t;
    renderHeader();
  }

  function renderHeader() {
    const t = trace;
    header.hidden = false;
    goal.textContent = t.goal || '';
    badge.hidden = !t.pinned;
    pinButton.textContent = t.pinned ? 'Unpin' : 'Pin';
    pinButton.dataset.pinned = String(Boolean(t.pinned));
    el.dataset.pinned = String(Boolean(t.pinned));
    const facts = [
      ['Start URL', externalLink(t.start_url)],
      ['Task', taskLink(t.task_key, false)],
      ['Version', h('span', { class: 'version', text: `v${num(t.version)}` })],
      t.healed_from ? ['Healed from', traceLink(t.healed_from, `trace ${t.healed_from.slice(0, 8)}`, 'healed-from')] : null,
      ['Actions', h('span', { class: 'actions-count', text: String(num(t.action_count)) })],
      ['Recorded model use', h('span', { class: 'recorded-usage', text: usageText(t.recorded_usage) })],
      ['Created', fmtTime(t.create_time)],
      ['Recorded by', h('a', { class: 'run-link', href: runHash(t.id), text: `run ${t.id}` })],
    ].filter(Boolean);
    replace(details, h('dl', { class: 'facts' }, facts.map(([k, v]) => [h('dt', { text: k }), h('dd', {}, v)])));
  }

  function renderBody() {
    const t = trace;
    const actions = t.actions || [];
    const f = t.final || {};
    replace(body,
      h('h2', { text: 'Actions' }),
      actions.length
        ? h('ol', { class: 'timeline trace-actions' }, actions.map(actionCard))
        : h('p', { class: 'empty', text: 'The run reached its goal without acting on the page.' }),
      h('section', { class: 'trace-final' },
        h('h2', { text: 'Final page' }),
        h('dl', { class: 'facts' },
          f.url ? [h('dt', { text: 'URL' }), h('dd', {}, externalLink(f.url, 'final-url'))] : null,
          f.url_pattern ? [h('dt', { text: 'URL pattern' }), h('dd', {}, h('code', { class: 'url-pattern', text: f.url_pattern }))] : null,
          f.reason ? [h('dt', { text: 'Outcome' }), h('dd', { class: 'final-reason', text: f.reason })] : null),
        f.verdict ? h('div', { class: 'final-verdict' }, verdictLine(f.verdict)) : null,
        f.criteria?.length ? criteriaTable(f.criteria) : null));
  }

  // --- actions --------------------------------------------------------------

  async function togglePin() {
    busy(true);
    try {
      setTrace(await call('POST', `${tracePath(id)}:pin`, { pinned: !trace.pinned }, signal));
      showError('');
    } catch (err) {
      reportBug(err);
      if (!signal.aborted) showError(`Could not ${trace.pinned ? 'unpin' : 'pin'} the trace: ${err.message}`);
    } finally {
      busy(false);
    }
  }

  async function remove() {
    busy(true);
    try {
      await call('DELETE', tracePath(id), undefined, signal);
      location.hash = tracesHash('', false);
    } catch (err) {
      reportBug(err);
      if (!signal.aborted) showError(`Could not delete the trace: ${err.message}`);
      busy(false);
    }
  }

  // exportAs shows the trace exported in format name, with a button that
  // saves it as the file the server names.
  async function exportAs(name) {
    busy(true);
    try {
      const q = new URLSearchParams({ format: FORMATS[name].format });
      const out = await call('GET', `${tracePath(id)}:export?${q}`, undefined, signal);
      const filename = out.filename || `trace-${id}.txt`;
      const download = h('button', {
        type: 'button', class: 'primary download',
        on: { click: () => save(out.content || '', filename, out.content_type || 'text/plain') },
      }, `Download ${filename}`);
      const close = h('button', { type: 'button', class: 'quiet', on: { click: () => replace(exportSlot) } }, 'Close');
      replace(exportSlot, h('section', { class: 'export-panel', dataset: { format: name } },
        h('div', { class: 'export-head' }, h('h2', { text: FORMATS[name].label.replace('Export', 'Exported as') }),
          h('code', { class: 'filename', text: filename }), download, close),
        h('pre', { class: 'export-content', text: out.content || '' })));
      showError('');
    } catch (err) {
      reportBug(err);
      if (!signal.aborted) showError(`Could not export the trace: ${err.message}`);
    } finally {
      busy(false);
    }
  }

  async function start() {
    try {
      trace = await call('GET', tracePath(id), undefined, signal);
    } catch (err) {
      reportBug(err);
      if (!signal.aborted) showError(err.status === 404 ? 'There is no such trace.' : `Could not load the trace: ${err.message}`);
      return;
    }
    renderHeader();
    renderBody();
  }

  start();

  return {
    el,
    dispose() {
      abort.abort();
    },
  };
}

// save downloads content as a file named filename.
function save(content, filename, type) {
  const url = URL.createObjectURL(new Blob([content], { type }));
  const a = h('a', { href: url, download: filename, hidden: true });
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60000);
}

// TEST_ID_ATTRS are the attributes that name an element for tests (the
// matcher weighs them heavily).
const TEST_ID_ATTRS = ['data-testid', 'data-test', 'data-qa', 'data-cy'];

// actionCard is one recorded action: its tool and arguments (secrets stay
// {{placeholders}}), the element it acted on and the page it expected.
function actionCard(a) {
  const args = a.arguments && Object.keys(a.arguments).length ? json(a.arguments) : '';
  return h('li', { class: 'step trace-action', dataset: { step: String(num(a.step)), tool: a.tool || '' } },
    h('div', { class: 'step-head' },
      h('span', { class: 'step-number', text: `Step ${num(a.step)}` }),
      h('code', { class: 'tool', text: a.tool || '' })),
    h('div', { class: 'step-detail' },
      args ? clipped(args, 300, 'args') : null,
      a.target ? targetLine(a.target) : null,
      a.target_error ? h('div', { class: 'target-error note', text: `No fingerprint: ${a.target_error}` }) : null,
      h('div', { class: 'page' },
        h('span', { class: 'note', text: 'On ' }),
        h('code', { class: 'url-pattern', text: a.url_pattern || a.url || '' }),
        a.url_after && a.url_after !== a.url
          ? [h('span', { class: 'note', text: ' → ' }), externalLink(a.url_after, 'page-url url-after')] : null)));
}

// targetLine describes a target fingerprint: role and name, test id, text.
function targetLine(fp) {
  const attrs = fp.attrs || {};
  const testID = TEST_ID_ATTRS.find((k) => attrs[k]);
  const parts = [
    h('span', { class: 'target-role', text: fp.role || '' }),
    fp.name ? [' ', h('span', { class: 'target-name', text: `"${fp.name}"` })] : null,
    testID ? [' ', h('code', { class: 'target-testid', text: `${testID}=${attrs[testID]}` })] : null,
    fp.text && fp.text !== fp.name ? [' ', h('span', { class: 'target-text note', text: `text "${fp.text}"` })] : null,
  ];
  return h('div', { class: 'target' }, h('span', { class: 'note', text: 'Target ' }), parts);
}
