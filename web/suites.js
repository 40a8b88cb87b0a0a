// Suite runs: the history (#/suite-runs, newest first, optionally one
// suite's) and one suite run (#/suite-runs/{id}) followed live: its tests'
// outcomes, and for each attempt its run, oracles and evidence.

import { call, followAll, reportBug, sleep, suiteRunPath, watchSuiteRun } from './api.js';
import {
  clipped, enumLabel, externalLink, fmtDuration, fmtTime, h, num, replace, statusBadge, timeMs,
} from './dom.js';
import { thumbnail } from './media.js';

const PAGE_SIZE = 50;

// REFRESH_MS is how often the history is reloaded while one of its suite
// runs is unfinished, and a suite run is fetched again when its watch
// stream is not available.
const REFRESH_MS = 2000;

// LIVE_SUITE_STATUSES are the statuses a suite run can still leave.
const LIVE_SUITE_STATUSES = new Set(['SUITE_RUN_STATUS_QUEUED', 'SUITE_RUN_STATUS_RUNNING']);
const isLive = (sr) => LIVE_SUITE_STATUSES.has(sr.status);

// FINAL_OUTCOMES are the outcomes a test cannot leave.
const FINAL_OUTCOMES = new Set(['TEST_OUTCOME_PASSED', 'TEST_OUTCOME_FAILED', 'TEST_OUTCOME_FLAKY',
  'TEST_OUTCOME_ERROR', 'TEST_OUTCOME_SKIPPED']);

// suitesHash is the location of the history, of one suite when name is set.
export function suitesHash(name) {
  return name ? `#/suite-runs?${new URLSearchParams({ suite: name })}` : '#/suite-runs';
}

// suiteStatusBadge is a suite run's colored status; data-status carries the
// enum for styles and tests.
function suiteStatusBadge(s) {
  return h('span', {
    class: 'badge status', dataset: { status: s || 'SUITE_RUN_STATUS_UNSPECIFIED' },
    text: enumLabel(s, 'SUITE_RUN_STATUS_') || 'unknown',
  });
}

// outcomeBadge is a test's colored outcome.
function outcomeBadge(o) {
  return h('span', {
    class: 'badge test-outcome', dataset: { outcome: o || 'TEST_OUTCOME_UNSPECIFIED' },
    text: enumLabel(o, 'TEST_OUTCOME_') || 'unknown',
  });
}

// The summary's counts, in the order shown; zero counts are left out.
const COUNTS = ['passed', 'failed', 'flaky', 'errored', 'skipped', 'running', 'pending'];

function summaryCounts(s) {
  s = s || {};
  const shown = COUNTS.filter((k) => num(s[k]));
  return h('span', { class: 'suite-summary' },
    h('span', { class: 'count', dataset: { count: 'total' }, text: `${num(s.total)} test${num(s.total) === 1 ? '' : 's'}` }),
    shown.map((k) => [' · ', h('span', { class: 'count', dataset: { count: k }, text: `${num(s[k])} ${k}` })]));
}

const fmtScore = (v) => num(v).toFixed(2);
const fmtWeight = (v) => String(Number(num(v).toFixed(2)));

// span is how long something took from start to end (or until now).
function span(start, end, now = Date.now()) {
  const s = timeMs(start);
  if (s === null) return null;
  return (timeMs(end) ?? now) - s;
}

// ticking is a duration that counts on (data-start) while end is unset;
// the views' tickers update it.
function ticking(cls, start, end, live) {
  const el = h('span', { class: cls, text: fmtDuration(span(start, end)) });
  if (live && !end && timeMs(start) !== null) el.dataset.start = String(timeMs(start));
  return el;
}

function tick(root) {
  for (const el of root.querySelectorAll('[data-start]')) {
    el.textContent = fmtDuration(Date.now() - Number(el.dataset.start));
  }
}

// --- the history -------------------------------------------------------------

// suiteRunsView renders the history. query may name a suite (suite=…);
// setMode shows how the list is kept live.
export function suiteRunsView(query, { setMode }) {
  const suite = (query.get('suite') || '').trim();
  const abort = new AbortController();
  const runs = new Map();
  const rows = new Map(); // id → {sig, tr}: rows are rebuilt only when their suite run changed
  let nextToken = '';

  const tbody = h('tbody');
  const message = h('p', { class: 'message', hidden: true });
  const more = h('button', { type: 'button', class: 'more', hidden: true, on: { click: () => fetchPage(PAGE_SIZE, nextToken) } }, 'Load more');
  const empty = h('p', { class: 'empty', hidden: true }, suite
    ? 'This suite has not been run yet.'
    : 'No suite runs yet. Start one with POST /v1/suites/{suite}:run, or "wayfinder test run suite.yaml".');

  const showError = (err) => {
    message.hidden = false;
    message.textContent = err.status === 401 ? 'An API key is needed.' : `Could not load the suite runs: ${err.message}`;
  };

  // A refresh asked for while one is under way runs once more after it.
  let fetching = null;
  let again = false;
  let timer = null;

  async function fetchPage(size, token) {
    const q = new URLSearchParams({ page_size: String(size) });
    if (suite) q.set('suite', suite);
    if (token) q.set('page_token', token);
    try {
      const page = await call('GET', `/v1/suite-runs?${q}`, undefined, abort.signal);
      if (!token) runs.clear();
      for (const sr of page.suite_runs || []) runs.set(sr.id, sr);
      nextToken = page.next_page_token || '';
      message.hidden = true;
      renderAll();
    } catch (err) {
      reportBug(err);
      if (!abort.signal.aborted) showError(err);
    }
  }

  // refresh reloads what is shown, then keeps reloading every REFRESH_MS
  // while a shown suite run is unfinished.
  async function refresh() {
    if (fetching) {
      again = true;
      return;
    }
    clearTimeout(timer);
    timer = null;
    fetching = (async () => {
      do {
        again = false;
        await fetchPage(Math.min(200, Math.max(PAGE_SIZE, runs.size)), '');
      } while (again && !abort.signal.aborted);
    })();
    try {
      await fetching;
    } finally {
      fetching = null;
    }
    if (!abort.signal.aborted && [...runs.values()].some(isLive)) timer = setTimeout(refresh, REFRESH_MS);
  }

  // A suite run's tests are runs: a run queued while nothing shown is
  // live may belong to a new suite run.
  function onEvent(ev) {
    if (ev.type === 'RUN_EVENT_TYPE_QUEUED' && !timer) refresh();
  }

  function row(sr) {
    const href = `#/suite-runs/${encodeURIComponent(sr.id)}`;
    return h('tr', { dataset: { suiteRunId: sr.id, status: sr.status || '' } },
      h('td', {}, suiteStatusBadge(sr.status)),
      h('td', { class: 'suite-cell' },
        h('a', { class: 'suite-name', href, text: sr.suite || '' }),
        sr.tags?.length ? h('div', { class: 'meta' }, sr.tags.map((t) => h('span', { class: 'label', text: t }))) : null),
      h('td', { class: 'summary-cell' }, summaryCounts(sr.summary)),
      h('td', { class: 'time', text: fmtTime(sr.create_time) }),
      h('td', { class: 'num' }, ticking('duration', sr.start_time, sr.end_time, isLive(sr))));
  }

  function renderAll() {
    const sorted = [...runs.values()].sort((a, b) => (timeMs(b.create_time) ?? 0) - (timeMs(a.create_time) ?? 0));
    for (const sr of sorted) {
      const sig = JSON.stringify(sr);
      if (rows.get(sr.id)?.sig !== sig) rows.set(sr.id, { sig, tr: row(sr) });
    }
    for (const id of rows.keys()) if (!runs.has(id)) rows.delete(id);
    replace(tbody, sorted.map((sr) => rows.get(sr.id).tr));
    empty.hidden = sorted.length > 0;
    more.hidden = !nextToken;
  }

  const ticker = setInterval(() => tick(tbody), 1000);

  const suiteInput = h('input', {
    name: 'suite', type: 'search', value: suite, placeholder: 'suite name', 'aria-label': 'Suite filter', autocomplete: 'off',
  });
  const suiteForm = h('form', {
    class: 'label-filter suite-filter',
    on: {
      submit: (e) => {
        e.preventDefault();
        location.hash = suitesHash(suiteInput.value.trim());
      },
    },
  }, suiteInput, h('button', { type: 'submit' }, 'Filter'),
  suite ? h('a', { class: 'chip', href: suitesHash(''), text: 'all suites' }) : null);

  const el = h('section', { class: 'suite-runs' },
    h('div', { class: 'filters' }, h('h1', { text: suite ? `Suite runs of ${suite}` : 'Suite runs' }), suiteForm),
    message,
    h('table', { class: 'runs-table suite-runs-table' },
      h('thead', {}, h('tr', {},
        ['Status', 'Suite', 'Tests', 'Created', 'Duration'].map((c) => h('th', { scope: 'col', text: c })))),
      tbody),
    empty, more);

  refresh();
  const stop = followAll({ event: onEvent, mode: setMode, resync: refresh });

  return {
    el,
    dispose() {
      abort.abort();
      stop();
      clearTimeout(timer);
      clearInterval(ticker);
      setMode('');
    },
  };
}

// --- one suite run -----------------------------------------------------------

// suiteRunView renders suite run id, followed by its watch stream (or by
// polling when the stream fails) until it ends.
export function suiteRunView(id) {
  const abort = new AbortController();
  const signal = abort.signal;
  let sr = null;

  // The title row stays (a button being clicked is never replaced); the
  // details below it are rebuilt on each change.
  const badge = suiteStatusBadge('');
  const title = h('h1', { class: 'suite-name' });
  const feed = h('span', { class: 'note feed', hidden: true });
  const cancelButton = h('button', { type: 'button', class: 'danger cancel', hidden: true, on: { click: cancel } }, 'Cancel suite run');
  const cancelNote = h('span', { class: 'note', text: 'Cancel requested', hidden: true });
  const details = h('div');
  const header = h('div', { class: 'run-header suite-run-header', hidden: true },
    h('div', { class: 'title-row' }, badge, title, feed, cancelButton, cancelNote), details);
  const message = h('p', { class: 'message', hidden: true });
  const list = h('ol', { class: 'test-results', 'aria-live': 'polite' });
  const back = h('a', { class: 'back', href: suitesHash(''), text: '← All suite runs' });
  const el = h('section', { class: 'suite-run', dataset: { suiteRunId: id } }, back, message, header, list);

  const showError = (text) => {
    message.hidden = !text;
    message.textContent = text || '';
  };

  const setFeed = (text) => {
    feed.hidden = !text;
    feed.textContent = text;
  };

  // setSuiteRun shows next. The stream, polls and the cancel's answer may
  // cross: a suite run that has ended never goes back to a live state.
  function setSuiteRun(next) {
    if (sr && !isLive(sr) && isLive(next)) return;
    if (!next.results && sr?.results) next = { ...next, results: sr.results };
    sr = next;
    render();
  }

  function render() {
    const live = isLive(sr);
    header.hidden = false;
    badge.dataset.status = sr.status || 'SUITE_RUN_STATUS_UNSPECIFIED';
    badge.textContent = enumLabel(sr.status, 'SUITE_RUN_STATUS_') || 'unknown';
    title.textContent = sr.suite || '';
    cancelButton.hidden = !live || Boolean(sr.cancel_requested);
    cancelNote.hidden = !live || !sr.cancel_requested;
    if (!live) setFeed('');

    const facts = [
      ['Suite', h('a', { class: 'suite-history', href: suitesHash(sr.suite), title: 'All runs of this suite', text: sr.suite || '' })],
      ['Tests', summaryCounts(sr.summary)],
      ['Created', fmtTime(sr.create_time)],
      sr.start_time ? ['Started', fmtTime(sr.start_time)] : null,
      sr.end_time ? ['Ended', fmtTime(sr.end_time)] : null,
      sr.start_time ? ['Duration', ticking('duration', sr.start_time, sr.end_time, live)] : null,
      sr.tags?.length ? ['Tags', sr.tags.map((t) => h('span', { class: 'label', text: t }))] : null,
      sr.request_id ? ['Request ID', h('code', { text: sr.request_id })] : null,
    ].filter(Boolean);
    replace(details,
      h('dl', { class: 'facts' }, facts.map(([k, v]) => [h('dt', { text: k }), h('dd', {}, v)])),
      sr.error ? h('div', { class: 'error-box', text: sr.error }) : null);
    renderResults();
  }

  // Results are rebuilt only when they changed; a test's attempts stay
  // open across updates once opened.
  const items = new Map(); // position → {sig, li}
  const open = new Set(); // names of tests whose attempts are open
  function renderResults() {
    const results = sr.results || [];
    results.forEach((r, i) => {
      const sig = JSON.stringify(r);
      if (items.get(i)?.sig === sig) return;
      items.set(i, { sig, li: resultItem(r, open) });
    });
    for (const i of items.keys()) if (i >= results.length) items.delete(i);
    replace(list, results.map((_, i) => items.get(i).li));
  }

  const ticker = setInterval(() => tick(el), 1000);

  async function cancel() {
    cancelButton.disabled = true;
    try {
      setSuiteRun(await call('POST', `${suiteRunPath(id)}:cancel`, {}, signal));
    } catch (err) {
      reportBug(err);
      if (!signal.aborted) showError(`Could not cancel: ${err.message}`);
    } finally {
      cancelButton.disabled = false;
    }
  }

  async function start() {
    try {
      setSuiteRun(await call('GET', suiteRunPath(id), undefined, signal));
    } catch (err) {
      reportBug(err);
      if (!signal.aborted) {
        showError(err.status === 404 ? 'There is no such suite run.' : `Could not load the suite run: ${err.message}`);
      }
      return;
    }
    if (!isLive(sr)) return;
    setFeed('live');
    try {
      await watchSuiteRun(id, setSuiteRun, signal);
    } catch (err) {
      // A refused or broken stream (or a server without it): poll.
      if (signal.aborted || err.status === 401) return;
    }
    while (!signal.aborted && isLive(sr)) {
      setFeed(`updating every ${REFRESH_MS / 1000} s`);
      await sleep(REFRESH_MS, signal);
      if (signal.aborted) return;
      try {
        setSuiteRun(await call('GET', suiteRunPath(id), undefined, signal));
        showError('');
      } catch (err) {
        reportBug(err);
        if (signal.aborted) return;
        showError(err.status === 404 ? 'There is no such suite run.' : `Could not load the suite run: ${err.message}`);
        if (err.status === 404 || err.status === 401) return;
      }
    }
  }

  start();

  return {
    el,
    dispose() {
      abort.abort();
      clearInterval(ticker);
    },
  };
}

// resultItem is a test's result: its outcome, score against its threshold
// and message, and its attempts behind a disclosure (open when its name is
// in open, which it keeps up to date).
function resultItem(r, open) {
  const attempts = r.attempts || [];
  const decided = FINAL_OUTCOMES.has(r.outcome) && attempts.length > 0;
  const live = !FINAL_OUTCOMES.has(r.outcome);
  const head = h('div', { class: 'test-head' },
    outcomeBadge(r.outcome),
    h('span', { class: 'test-name', text: r.test || '' }),
    decided ? h('span', { class: 'test-score', text: `score ${fmtScore(r.score)} of ${fmtScore(r.pass_threshold)} needed` }) : null,
    r.start_time ? ticking('took', r.start_time, r.end_time, live) : null);
  const toggle = (e) => {
    if (e.target.open) open.add(r.test);
    else open.delete(r.test);
  };
  return h('li', { class: 'test-result', dataset: { test: r.test || '', outcome: r.outcome || 'TEST_OUTCOME_UNSPECIFIED' } },
    head,
    r.message ? h('div', { class: 'test-message', text: r.message }) : null,
    attempts.length ? h('details', { class: 'attempts', open: open.has(r.test), on: { toggle } },
      h('summary', { text: attempts.length === 1 ? '1 attempt' : `${attempts.length} attempts` }),
      attempts.map(attemptCard)) : null);
}

// attemptCard is one attempt: its run, verdict, evidence and oracles.
function attemptCard(a) {
  const finished = Boolean(a.end_time);
  return h('div', { class: 'attempt', dataset: { attempt: String(a.number || 0), passed: finished ? String(Boolean(a.passed)) : '' } },
    h('div', { class: 'attempt-head' },
      h('span', { class: 'step-number', text: `Attempt ${a.number || 0}` }),
      finished
        ? h('span', { class: `badge attempt-verdict ${a.passed ? 'ok' : 'bad'}`, text: a.passed ? 'passed' : 'failed' })
        : h('span', { class: 'working', text: 'running…' }),
      a.run_id ? h('a', { class: 'run-link', href: `#/runs/${encodeURIComponent(a.run_id)}`, text: `run ${a.run_id.slice(0, 8)}` }) : null,
      a.run_status ? statusBadge(a.run_status) : null,
      finished ? h('span', { class: 'attempt-score', text: `score ${fmtScore(a.score)}` }) : null,
      a.timed_out ? h('span', { class: 'badge timed-out', text: 'timed out' }) : null,
      a.step_count ? h('span', { class: 'took', text: `${a.step_count} step${a.step_count === 1 ? '' : 's'}` }) : null,
      a.start_time ? ticking('took', a.start_time, a.end_time, !finished) : null),
    h('div', { class: 'attempt-body' },
      a.final_screenshot_media_id ? thumbnail(a.final_screenshot_media_id, '', 'Final screenshot of the attempt') : null,
      h('div', { class: 'attempt-detail' },
        a.final_url ? h('div', { class: 'page' }, h('span', { class: 'note', text: 'Final URL ' }), externalLink(a.final_url, 'page-url final-url')) : null,
        a.message ? h('div', { class: 'attempt-message', text: a.message }) : null,
        a.oracles?.length ? oracleTable(a.oracles) : null)));
}

function oracleTable(oracles) {
  return h('table', { class: 'oracles' },
    h('thead', {}, h('tr', {},
      ['Oracle', 'Kind', 'Passed', 'Score', 'Weight', 'Required', 'Detail'].map((c) => h('th', { scope: 'col', text: c })))),
    h('tbody', {}, oracles.map((o) => h('tr', { dataset: { passed: String(Boolean(o.passed)) } },
      h('td', { class: 'oracle-name', text: o.name || '' }),
      h('td', { class: 'oracle-kind', text: o.kind || '' }),
      h('td', { class: 'oracle-passed', text: o.passed ? 'yes' : 'no' }),
      h('td', { class: 'num', text: fmtScore(o.score) }),
      h('td', { class: 'num', text: fmtWeight(o.weight) }),
      h('td', { class: 'oracle-required', text: o.required ? 'required' : '' }),
      h('td', { class: 'oracle-detail' }, o.detail ? clipped(o.detail, 300) : null)))));
}
