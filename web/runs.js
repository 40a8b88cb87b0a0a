// The runs list: newest first, filtered by status and labels, kept live by
// the tenant's event stream (or by polling when the server has none).

import { call, followAll, reportBug, runPath } from './api.js';
import {
  fmtCost, fmtDuration, fmtTime, fmtTokens, h, num, replace, runDuration, safeURL, clip,
  statusBadge, statusLabel, STATUSES, timeMs,
} from './dom.js';
import { image } from './media.js';

const PAGE_SIZE = 50;

// listHash is the location of the list with these filters.
export function listHash(statuses, labels) {
  const q = new URLSearchParams();
  if (statuses.size) q.set('status', [...statuses].map((s) => s.replace('RUN_STATUS_', '')).join(','));
  for (const l of labels) q.append('label', l); // a label value may hold a comma
  const qs = q.toString();
  return qs ? `#/?${qs}` : '#/';
}

// parseLabels reads "k=v, k2=v2"; it returns null when one is not k=v.
function parseLabels(text) {
  const out = text.split(',').map((s) => s.trim()).filter(Boolean);
  return out.every((l) => l.indexOf('=') > 0) ? out : null;
}

// runsView renders the list. query holds the filters (status, label);
// setMode shows how the list is kept live.
export function runsView(query, { setMode }) {
  const statuses = new Set((query.get('status') || '').split(',').filter(Boolean)
    .map((s) => `RUN_STATUS_${s.toUpperCase()}`).filter((s) => STATUSES.includes(s)));
  const labels = query.getAll('label').filter((l) => l.indexOf('=') > 0);
  const abort = new AbortController();
  const runs = new Map();
  const rows = new Map(); // id → {sig, tr}: rows are rebuilt only when their run changed
  let nextToken = '';

  const tbody = h('tbody');
  const message = h('p', { class: 'message', hidden: true });
  const more = h('button', { type: 'button', class: 'more', hidden: true, on: { click: () => load(nextToken) } }, 'Load more');
  const empty = h('p', { class: 'empty', hidden: true }, statuses.size || labels.length
    ? 'No runs match these filters.'
    : 'No runs yet. Create one with POST /v1/runs, or "wayfinder run --goal … --url …".');

  const matches = (run) => (statuses.size === 0 || statuses.has(run.status)) &&
    labels.every((l) => {
      const i = l.indexOf('=');
      return (run.params?.labels || {})[l.slice(0, i)] === l.slice(i + 1);
    });

  const listURL = (size, token) => {
    const q = new URLSearchParams({ page_size: String(size) });
    for (const s of statuses) q.append('statuses', s);
    for (const l of labels) q.append('labels', l);
    if (token) q.set('page_token', token);
    return `/v1/runs?${q}`;
  };

  const showError = (err) => {
    message.hidden = false;
    message.textContent = err.status === 401 ? 'An API key is needed.' : `Could not load the runs: ${err.message}`;
  };

  // Events and list pages race: a page asked for before an event may
  // arrive after it. While pages are being fetched, runs updated by events
  // are remembered, and keep their newer state when the page lands.
  let updates = 0;
  let fetching = 0;
  const recent = new Map(); // id → {run, n}

  function applyPage(page, since, append) {
    if (!append) runs.clear();
    for (const r of page.runs || []) runs.set(r.id, r);
    for (const [id, { run, n }] of recent) {
      if (n <= since) recent.delete(id);
      else if (run && matches(run)) runs.set(id, run);
      else runs.delete(id);
    }
    nextToken = page.next_page_token || '';
    message.hidden = true;
    renderAll();
  }

  async function fetchPage(size, token) {
    const since = updates;
    fetching++;
    try {
      applyPage(await call('GET', listURL(size, token), undefined, abort.signal), since, Boolean(token));
    } catch (err) {
      reportBug(err);
      if (!abort.signal.aborted) showError(err);
    } finally {
      if (--fetching === 0) recent.clear();
    }
  }

  const load = (token) => fetchPage(PAGE_SIZE, token);
  // resync reloads what is shown (events may have been missed, or the
  // server has no stream and this is a poll).
  const resync = () => fetchPage(Math.min(200, Math.max(PAGE_SIZE, runs.size)), '');

  // upsert shows run (null: removes id) as an event told. A run older
  // than the one shown (by event sequence) is a stale answer and ignored.
  function upsert(id, run) {
    const shown = runs.get(id) || recent.get(id)?.run;
    if (run && shown && num(run.last_event_sequence) < num(shown.last_event_sequence)) return;
    if (fetching) recent.set(id, { run, n: ++updates });
    if (run && matches(run)) runs.set(id, run);
    else runs.delete(id);
    renderAll();
  }

  // A run's events are many (tool calls, verdicts); its row is fetched
  // again once per burst, not once per event.
  const inflight = new Map();
  async function refresh(id) {
    if (inflight.has(id)) {
      inflight.get(id).again = true;
      return;
    }
    const state = { again: true };
    inflight.set(id, state);
    try {
      while (state.again && !abort.signal.aborted) {
        state.again = false;
        upsert(id, await call('GET', runPath(id), undefined, abort.signal));
      }
    } catch (err) {
      reportBug(err);
      if (err.status === 404) upsert(id, null);
    } finally {
      inflight.delete(id);
    }
  }

  function onEvent(ev) {
    const seq = String(ev.sequence);
    if (ev.type === 'RUN_EVENT_TYPE_FINISHED' && ev.run) {
      upsert(ev.run_id, { ...ev.run, last_event_sequence: seq });
      return;
    }
    const known = runs.get(ev.run_id);
    if (known && ev.status && ev.status !== known.status) upsert(known.id, { ...known, status: ev.status, last_event_sequence: seq });
    // A run whose status the filter excludes needs no fetch.
    if (statuses.size && ev.status && !statuses.has(ev.status)) return;
    refresh(ev.run_id);
  }

  function row(run) {
    const href = `#/runs/${encodeURIComponent(run.id)}`;
    const url = safeURL(run.params?.start_url);
    const host = url ? new URL(url).host : run.params?.start_url || '';
    const usage = run.usage || {};
    const tokens = num(usage.input_tokens) + num(usage.output_tokens);
    const start = timeMs(run.start_time);
    const duration = h('td', { class: 'num duration', text: fmtDuration(runDuration(run)) });
    if (start !== null && !run.end_time) duration.dataset.start = String(start);
    return h('tr', { dataset: { runId: run.id, status: run.status } },
      h('td', {}, statusBadge(run.status)),
      h('td', { class: 'goal-cell' },
        h('a', { class: 'goal', href, title: clip(run.params?.goal, 500), text: clip(run.params?.goal, 160) }),
        h('div', { class: 'meta' },
          h('span', { class: 'host', text: host }),
          Object.entries(run.params?.labels || {}).map(([k, v]) => h('span', { class: 'label', text: `${k}=${v}` })))),
      h('td', { class: 'time', text: fmtTime(run.create_time) }),
      duration,
      h('td', { class: 'num steps', text: String(run.step_count || 0) }),
      h('td', { class: 'num tokens', text: tokens ? fmtTokens(tokens) : '' }),
      h('td', { class: 'num cost', text: num(usage.cost_usd) ? fmtCost(usage.cost_usd) : '' }),
      h('td', { class: 'shot' }, run.final_screenshot_media_id
        ? h('a', { href, class: 'thumb-link' }, image(run.final_screenshot_media_id, 'Final screenshot', 'list-thumb'))
        : null));
  }

  function renderAll() {
    const sorted = [...runs.values()].sort((a, b) => (timeMs(b.create_time) ?? 0) - (timeMs(a.create_time) ?? 0));
    for (const r of sorted) {
      const sig = JSON.stringify(r);
      if (rows.get(r.id)?.sig !== sig) rows.set(r.id, { sig, tr: row(r) });
    }
    for (const id of rows.keys()) if (!runs.has(id)) rows.delete(id);
    replace(tbody, sorted.map((r) => rows.get(r.id).tr));
    empty.hidden = sorted.length > 0;
    more.hidden = !nextToken;
  }

  // Durations of live runs tick.
  const ticker = setInterval(() => {
    for (const td of tbody.querySelectorAll('td[data-start]')) {
      td.textContent = fmtDuration(Date.now() - Number(td.dataset.start));
    }
  }, 1000);

  const chip = (s) => {
    const on = s ? statuses.has(s) : statuses.size === 0;
    const next = new Set(s ? statuses : []);
    if (s && on) next.delete(s); else if (s) next.add(s);
    return h('a', {
      class: 'chip', href: listHash(next, labels), 'aria-pressed': String(on),
      dataset: { filter: s || 'all' }, text: s ? statusLabel(s) : 'all',
    });
  };

  const labelInput = h('input', {
    name: 'label', type: 'search', value: labels.join(', '), placeholder: 'label filter: key=value, …',
    'aria-label': 'Label filter', autocomplete: 'off',
  });
  const labelError = h('span', { class: 'field-error', hidden: true, text: 'Labels are key=value, separated by commas.' });
  const labelForm = h('form', {
    class: 'label-filter',
    on: {
      submit: (e) => {
        e.preventDefault();
        const parsed = parseLabels(labelInput.value);
        labelError.hidden = parsed !== null;
        if (parsed) location.hash = listHash(statuses, parsed);
      },
    },
  }, labelInput, h('button', { type: 'submit' }, 'Filter'), labelError);

  const el = h('section', { class: 'runs' },
    h('div', { class: 'filters' },
      h('nav', { class: 'chips', 'aria-label': 'Status filter' }, chip(null), STATUSES.map(chip)),
      labelForm),
    message,
    h('table', { class: 'runs-table' },
      h('thead', {}, h('tr', {},
        ['Status', 'Goal', 'Created', 'Duration', 'Steps', 'Tokens', 'Cost', 'Screenshot']
          .map((c) => h('th', { scope: 'col', text: c })))),
      tbody),
    empty, more);

  load('');
  const stop = followAll({ event: onEvent, mode: setMode, resync });

  return {
    el,
    dispose() {
      abort.abort();
      stop();
      clearInterval(ticker);
      setMode('');
    },
  };
}
