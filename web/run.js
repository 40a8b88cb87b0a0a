// A run: its header (status, timings, usage, result, replay, approval,
// cancel), its live step timeline and its prompt runs.

import { call, followRun, listAll, reportBug, runPath } from './api.js';
import {
  enumLabel, externalLink, fmtCost, fmtDuration, fmtTime, fmtTokens, h, num, replace, runDuration, statusBadge,
  statusLabel, timeMs, LIVE_STATUSES,
} from './dom.js';
import { thumbnail } from './media.js';
import { livePanel } from './live.js';
import { promptRunsView } from './prompts.js';
import { addProgress, noteCard, progressCard, stepCard } from './steps.js';
import { verdictLine } from './verdict.js';

// runView renders run id with tab "steps" or "prompt-runs".
export function runView(id, tab) {
  const abort = new AbortController();
  const signal = abort.signal;
  let run = null;
  // GetRun answers and the event stream race: a run fetched before an
  // event arrived is older than what the event said. The newest by event
  // sequence wins.
  let seen = 0;
  function setRun(r) {
    const seq = num(r.last_event_sequence);
    if (run && seq < seen) return false;
    run = r;
    seen = Math.max(seen, seq);
    renderHeader();
    live?.setTakeover(run.takeover || null, true); // the run says which one is open
    return true;
  }

  // The title row stays (a button being clicked is never replaced); the
  // details below it are rebuilt on each change.
  const badge = statusBadge('');
  const goal = h('h1', { class: 'goal' });
  const cancelButton = h('button', { type: 'button', class: 'danger cancel', hidden: true, on: { click: cancelRun } }, 'Cancel run');
  const cancelNote = h('span', { class: 'note', text: 'Cancel requested', hidden: true });
  const details = h('div');
  const header = h('div', { class: 'run-header' }, h('div', { class: 'title-row' }, badge, goal, cancelButton, cancelNote), details);
  const approval = h('div', { class: 'approval-slot' });
  const liveSlot = h('div', { class: 'live-slot' });
  const message = h('p', { class: 'message', hidden: true });
  const timeline = h('ol', { class: 'timeline', 'aria-live': 'polite' });
  const waiting = h('p', { class: 'empty', text: 'No steps yet.' });
  const actorCounts = h('p', { class: 'actor-counts', hidden: true });
  const stepsTab = h('div', { class: 'tab-steps' }, actorCounts, timeline, waiting);
  const promptsTab = h('div', { class: 'tab-prompts' });
  const tabLink = (name, label, href) => h('a', { class: 'tab', href, dataset: { tab: name }, text: label });
  const tabs = h('nav', { class: 'tabs' },
    tabLink('steps', 'Steps', `#/runs/${encodeURIComponent(id)}`),
    tabLink('prompt-runs', 'Prompt runs', `#/runs/${encodeURIComponent(id)}/prompt-runs`));

  const el = h('section', { class: 'run', dataset: { runId: id } },
    h('a', { class: 'back', href: '#/', text: '← All runs' }),
    message, header, approval, liveSlot, tabs, stepsTab, promptsTab);

  const showError = (text) => {
    message.hidden = !text;
    message.textContent = text || '';
  };

  // --- header -------------------------------------------------------------

  // The duration of a live run ticks.
  function durationCell() {
    const el = h('span', { class: 'duration', text: fmtDuration(runDuration(run)) });
    if (!run.end_time && LIVE_STATUSES.has(run.status)) el.dataset.start = String(timeMs(run.start_time));
    return el;
  }
  const ticker = setInterval(() => {
    const el = details.querySelector('.duration[data-start]');
    if (el) el.textContent = fmtDuration(Date.now() - Number(el.dataset.start));
  }, 1000);

  function renderHeader() {
    const p = run.params || {};
    const u = run.usage || {};
    const facts = [
      ['Start URL', externalLink(p.start_url)],
      run.final_url && run.final_url !== p.start_url ? ['Final URL', externalLink(run.final_url)] : null,
      ['Created', fmtTime(run.create_time)],
      run.start_time ? ['Started', fmtTime(run.start_time)] : null,
      run.end_time ? ['Ended', fmtTime(run.end_time)] : null,
      run.start_time ? ['Duration', durationCell()] : null,
      ['Steps', `${run.step_count || 0} of ${p.max_steps || '?'}`],
      ['Tokens', `${fmtTokens(u.input_tokens)} in · ${fmtTokens(u.output_tokens)} out` +
        (num(u.cached_input_tokens) ? ` · ${fmtTokens(u.cached_input_tokens)} cached` : '')],
      ['Cost', `${fmtCost(u.cost_usd)} · ${num(u.model_calls)} model calls`],
      num(run.attempts) > 1 ? ['Attempts', String(run.attempts)] : null,
      Object.keys(p.labels || {}).length
        ? ['Labels', Object.entries(p.labels).map(([k, v]) => h('span', { class: 'label', text: `${k}=${v}` }))] : null,
    ].filter(Boolean);

    const live = LIVE_STATUSES.has(run.status);
    badge.dataset.status = run.status || 'RUN_STATUS_UNSPECIFIED';
    badge.textContent = statusLabel(run.status);
    goal.textContent = p.goal || '';
    cancelButton.hidden = !live || Boolean(run.cancel_requested);
    cancelNote.hidden = !live || !run.cancel_requested;

    replace(details,
      h('dl', { class: 'facts' }, facts.map(([k, v]) => [h('dt', { text: k }), h('dd', {}, v)])),
      run.error ? h('div', { class: 'error-box' },
        h('strong', { text: enumLabel(run.error.category, 'ERROR_CATEGORY_') || 'error' }),
        run.error.step_number ? ` (step ${run.error.step_number})` : '', ': ',
        h('span', { class: 'error-message', text: run.error.message || '' })) : null,
      run.replay ? replayPanel(run.replay) : null,
      run.summary ? h('div', { class: 'summary' }, h('h2', { text: 'Summary' }), h('p', { text: run.summary })) : null,
      run.final_verdict ? h('div', { class: 'final-verdict' }, h('h2', { text: 'Final verdict' }), verdictLine(run.final_verdict)) : null,
      run.criteria?.length ? criteriaTable(run.criteria) : null);
    renderApproval();
    renderLive();
    renderCounts();
  }

  // renderCounts says how many finished steps a replay took and how many
  // the model (and a person) took, for a run that replays or replayed.
  function renderCounts() {
    const by = { replay: 0, model: 0, human: 0 };
    for (const li of items.values()) {
      if (!li.classList.contains('in-progress') && li.dataset.actor in by) by[li.dataset.actor]++;
    }
    actorCounts.hidden = !run?.replay && by.replay === 0;
    replace(actorCounts,
      h('span', { class: 'count', dataset: { actor: 'replay' }, text: `${by.replay} replayed` }), ' · ',
      h('span', { class: 'count', dataset: { actor: 'model' }, text: `${by.model} by the model` }),
      by.human ? [' · ', h('span', { class: 'count', dataset: { actor: 'human' }, text: `${by.human} by a person` })] : null);
  }

  // --- live view ----------------------------------------------------------

  // The live panel shows while a worker runs the run, and closes when the
  // run ends (or waits in the queue again).
  let live = null;
  function renderLive() {
    const on = run.status === 'RUN_STATUS_RUNNING' || run.status === 'RUN_STATUS_AWAITING_APPROVAL';
    if (on && !live && !signal.aborted) {
      live = livePanel(id);
      replace(liveSlot, live.el);
    } else if (!on && live) {
      live.dispose();
      live = null;
      replace(liveSlot);
    }
  }

  // --- approval -----------------------------------------------------------

  // The approval panel is rebuilt only when the request changes, so a
  // rejection message being typed survives updates of the header.
  let approvalShown = '';
  function renderApproval() {
    const pa = run.status === 'RUN_STATUS_AWAITING_APPROVAL' ? run.pending_approval : null;
    const key = pa ? pa.id || 'pending' : '';
    if (key === approvalShown) return;
    approvalShown = key;
    if (!pa) {
      replace(approval);
      return;
    }
    const error = h('p', { class: 'field-error', hidden: true });
    const text = h('textarea', {
      name: 'message', rows: '2', maxlength: '2000', 'aria-label': 'Rejection message',
      placeholder: 'Why not? The model reads this.',
    });
    const buttons = [];
    const answer = async (approved) => {
      buttons.forEach((b) => { b.disabled = true; });
      error.hidden = true;
      try {
        const body = { approved, message: approved ? '' : text.value.trim() };
        if (pa.id) body.approval_id = pa.id;
        setRun(await call('POST', `${runPath(id)}:approve`, body, signal));
      } catch (err) {
        reportBug(err);
        buttons.forEach((b) => { b.disabled = false; });
        error.hidden = false;
        error.textContent = `Could not answer: ${err.message}`;
        refreshRun();
      }
    };
    const approve = h('button', { type: 'button', class: 'primary approve', on: { click: () => answer(true) } }, 'Approve');
    const reject = h('button', { type: 'submit', class: 'danger reject' }, 'Reject');
    buttons.push(approve, reject);
    const source = { model: 'The model asks for approval', checkpoint: 'A checkpoint was reached', consent: 'A consent banner needs a decision' }[pa.source]
      || 'The run asks for approval';
    replace(approval, h('section', { class: 'approval', dataset: { approvalId: pa.id || '' } },
      h('h2', { text: source }),
      h('div', { class: 'approval-body' },
        pa.screenshot_media_id ? thumbnail(pa.screenshot_media_id, '', 'Screenshot at the approval request') : null,
        h('dl', { class: 'facts' },
          h('dt', { text: 'Action' }), h('dd', { class: 'approval-action', text: pa.action || '' }),
          h('dt', { text: 'Reason' }), h('dd', { class: 'approval-reason', text: pa.reason || '' }),
          pa.url ? [h('dt', { text: 'Page' }), h('dd', {}, externalLink(pa.url))] : null,
          pa.step_number ? [h('dt', { text: 'Step' }), h('dd', { text: String(pa.step_number) })] : null,
          pa.request_time ? [h('dt', { text: 'Asked' }), h('dd', { text: fmtTime(pa.request_time) })] : null)),
      h('div', { class: 'approval-actions' },
        approve,
        h('form', { class: 'reject-form', on: { submit: (e) => { e.preventDefault(); answer(false); } } }, text, reject)),
      error));
  }

  // --- actions ------------------------------------------------------------

  async function cancelRun() {
    cancelButton.disabled = true;
    try {
      setRun(await call('POST', `${runPath(id)}:cancel`, { reason: 'cancelled from the dashboard' }, signal));
    } catch (err) {
      reportBug(err);
      showError(`Could not cancel: ${err.message}`);
    } finally {
      cancelButton.disabled = false;
    }
  }

  // refreshRun fetches the run again; calls during a fetch coalesce.
  let refreshing = null;
  let again = false;
  async function refreshRun() {
    if (refreshing) {
      again = true;
      return refreshing;
    }
    refreshing = (async () => {
      for (let tries = 0; tries < 5; tries++) {
        again = false;
        try {
          // A stale answer (events overtook it) is asked again.
          if (!setRun(await call('GET', runPath(id), undefined, signal))) again = true;
        } catch (err) {
          reportBug(err);
          if (!signal.aborted) showError(`Could not load the run: ${err.message}`);
        }
        if (!again || signal.aborted) break;
      }
    })();
    try {
      await refreshing;
    } finally {
      refreshing = null;
    }
  }

  // --- timeline -----------------------------------------------------------

  const items = new Map(); // step number → <li>

  function putStep(step) {
    const li = stepCard(step);
    const old = items.get(step.number);
    if (old) old.replaceWith(li);
    else insertInOrder(step.number, li);
    items.set(step.number, li);
    waiting.hidden = true;
    if (run) renderCounts();
  }

  function insertInOrder(number, li) {
    const after = [...items.entries()].filter(([n]) => n > number).sort(([a], [b]) => a - b)[0];
    if (after) after[1].before(li);
    else timeline.appendChild(li);
  }

  function progress(number) {
    let li = items.get(number);
    if (!li) {
      li = progressCard(number);
      insertInOrder(number, li);
      items.set(number, li);
      waiting.hidden = true;
    }
    return li;
  }

  let current = 0; // the step in progress
  function onEvent(ev) {
    seen = Math.max(seen, num(ev.sequence));
    run.last_event_sequence = String(seen);
    if (ev.status && ev.status !== run.status) {
      run.status = ev.status;
      renderHeader();
    }
    switch (ev.type) {
      case 'RUN_EVENT_TYPE_STEP_STARTED':
        current = ev.step?.number || current + 1;
        progress(current);
        break;
      case 'RUN_EVENT_TYPE_TOOL_CALLED':
      case 'RUN_EVENT_TYPE_TOOL_RESULT': {
        const li = progress(ev.tool?.step_number || current);
        if (li.classList.contains('in-progress')) addProgress(li, ev);
        break;
      }
      case 'RUN_EVENT_TYPE_JUDGE_VERDICT': {
        const li = items.get(current);
        if (li?.classList.contains('in-progress')) addProgress(li, ev);
        break;
      }
      case 'RUN_EVENT_TYPE_STEP_FINISHED':
        if (ev.step) putStep(ev.step);
        refreshRun();
        break;
      case 'RUN_EVENT_TYPE_FINISHED':
        if (ev.run) setRun({ ...ev.run, last_event_sequence: String(seen) });
        break;
      case 'RUN_EVENT_TYPE_APPROVAL_REQUESTED':
      case 'RUN_EVENT_TYPE_APPROVAL_ANSWERED':
      case 'RUN_EVENT_TYPE_CANCEL_REQUESTED':
      case 'RUN_EVENT_TYPE_REQUEUED':
      case 'RUN_EVENT_TYPE_AUTH_APPLIED':
      case 'RUN_EVENT_TYPE_POLICY':
      case 'RUN_EVENT_TYPE_TAKEOVER':
        if (ev.takeover) live?.setTakeover(ev.takeover, false);
        timeline.appendChild(noteCard(ev));
        refreshRun();
        break;
      default:
        break;
    }
  }

  // --- tabs ---------------------------------------------------------------

  let prompts = null;
  function setTab(name) {
    tab = name === 'prompt-runs' ? 'prompt-runs' : 'steps';
    for (const a of tabs.children) a.setAttribute('aria-current', String(a.dataset.tab === tab));
    stepsTab.hidden = tab !== 'steps';
    promptsTab.hidden = tab !== 'prompt-runs';
    if (tab === 'prompt-runs') {
      prompts?.dispose();
      prompts = promptRunsView(id);
      replace(promptsTab, prompts.el);
    }
  }

  // --- start --------------------------------------------------------------

  async function start() {
    try {
      setRun(await call('GET', runPath(id), undefined, signal));
    } catch (err) {
      reportBug(err);
      if (!signal.aborted) showError(err.status === 404 ? 'There is no such run.' : `Could not load the run: ${err.message}`);
      return;
    }
    // Steps recorded so far, then the events after the run's newest one:
    // a step finished in between comes from both and is shown once.
    const after = Number(run.last_event_sequence || 0);
    try {
      for (const s of await listAll(`${runPath(id)}/steps?page_size=500`, 'steps', signal)) putStep(s);
    } catch (err) {
      reportBug(err);
      if (!signal.aborted) showError(`Could not load the steps: ${err.message}`);
    }
    current = Math.max(0, ...items.keys());
    if (!LIVE_STATUSES.has(run.status)) return;
    try {
      await followRun(id, after, onEvent, signal);
    } catch (err) {
      reportBug(err);
      if (!signal.aborted) showError(`Live updates stopped: ${err.message}`);
    }
  }

  setTab(tab);
  start();

  return {
    el,
    runId: id,
    setTab,
    dispose() {
      abort.abort();
      clearInterval(ticker);
      live?.dispose();
      prompts?.dispose();
    },
  };
}

const REPLAY_OUTCOMES = {
  REPLAY_OUTCOME_REPLAYED: 'every action of the trace ran without the model',
  REPLAY_OUTCOME_HEALED: 'the page had changed: the model took over and the run recorded a healed trace',
  REPLAY_OUTCOME_DIVERGED: 'the page had changed and the strict replay stopped',
  REPLAY_OUTCOME_NO_TRACE: 'the task had no trace: the model ran it and it recorded one',
};

const traceHref = (id) => `#/traces/${encodeURIComponent(id)}`;

// replayPanel shows what a run's replay did (Run.replay): its mode and
// outcome, the trace it followed, the actions it replayed and relocated,
// where it diverged, what it saved and the trace it healed into.
function replayPanel(r) {
  const outcome = r.outcome || 'REPLAY_OUTCOME_UNSPECIFIED';
  const replayed = num(r.replayed_actions);
  const relocated = num(r.relocated_actions);
  const facts = [
    ['Mode', h('span', { class: 'replay-mode', text: enumLabel(r.mode, 'REPLAY_MODE_') || 'off' })],
    r.trace_id ? ['Trace', h('a', { class: 'replay-trace', href: traceHref(r.trace_id), text: `trace ${r.trace_id.slice(0, 8)} · v${num(r.trace_version)}` })] : null,
    r.trace_id ? ['Actions', h('span', { class: 'replay-actions', text: `${replayed} replayed` + (relocated ? ` · ${relocated} relocated` : '') })] : null,
    num(r.diverged_at_step) ? ['Diverged', h('span', { class: 'replay-divergence' },
      h('strong', { class: 'diverged-step', text: `at step ${num(r.diverged_at_step)}` }),
      r.divergence ? [': ', h('span', { class: 'divergence', text: r.divergence })] : null)] : null,
    r.trace_id ? ['Saved', h('span', { class: 'replay-saved', text: `${num(r.model_calls_saved)} model call${num(r.model_calls_saved) === 1 ? '' : 's'} · ${fmtTokens(r.tokens_saved)} tokens` })] : null,
    r.healed_trace_id ? ['Healed trace', h('a', { class: 'healed-trace', href: traceHref(r.healed_trace_id), text: `trace ${r.healed_trace_id.slice(0, 8)}` })] : null,
  ].filter(Boolean);
  return h('section', { class: 'replay', dataset: { outcome } },
    h('h2', {}, 'Replay ', h('span', { class: 'badge replay-outcome', dataset: { outcome }, text: enumLabel(outcome, 'REPLAY_OUTCOME_') || 'unknown' })),
    REPLAY_OUTCOMES[outcome] ? h('p', { class: 'note', text: REPLAY_OUTCOMES[outcome] }) : null,
    h('dl', { class: 'facts' }, facts.map(([k, v]) => [h('dt', { text: k }), h('dd', {}, v)])));
}

const CONDITIONS = ['url_pattern', 'title_pattern', 'text_present', 'element_present', 'js_expression'];

// criteriaTable shows completion indicators' results (IndicatorResult).
export function criteriaTable(criteria) {
  return h('div', { class: 'criteria' },
    h('h2', { text: 'Completion criteria' }),
    h('table', {},
      h('thead', {}, h('tr', {}, ['Indicator', 'Kind', 'Condition', 'Matched', 'Step'].map((c) => h('th', { text: c })))),
      h('tbody', {}, criteria.map((c) => {
        const ind = c.indicator || {};
        const cond = CONDITIONS.find((k) => ind[k] !== undefined);
        return h('tr', { dataset: { matched: String(Boolean(c.matched)) } },
          h('td', { text: ind.name || '' }),
          h('td', { text: c.kind || '' }),
          h('td', {}, cond ? h('code', { text: `${cond.replace('_', ' ')}: ${ind[cond]}` }) : ''),
          h('td', { text: c.error ? `error: ${c.error}` : c.matched ? 'yes' : 'no' }),
          h('td', { text: c.step_number ? String(c.step_number) : '' }));
      }))));
}
