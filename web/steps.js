// Timeline entries: a finished step, a step in progress, a run event note.

import {
  clipped, durationMs, enumLabel, externalLink, fmtCost, fmtDuration, fmtTime, fmtTokens, h, json, num, timeMs,
} from './dom.js';
import { thumbnail } from './media.js';
import { verdictLine } from './verdict.js';

// ACTORS say who decided a step, for its badge: the model, a replay of a
// recorded trace (no model call), a person at the browser (a takeover) or
// the service itself.
const ACTORS = {
  model: 'the model decided this step',
  replay: 'replayed from a recorded trace, without a model call',
  human: 'a person took this step (takeover)',
  system: 'the service took this step',
};

// actorBadge names who decided a step.
function actorBadge(actor) {
  return h('span', { class: 'badge actor', dataset: { actor }, title: ACTORS[actor] || '', text: actor });
}

// stepCard renders a recorded step: who decided it, screenshot, page, the
// model's reasoning, its actions and their outcomes, the judge's verdict,
// errors and refused requests.
export function stepCard(s) {
  const start = timeMs(s.start_time);
  const end = timeMs(s.end_time);
  const u = s.usage || {};
  const tokens = num(u.input_tokens) + num(u.output_tokens);
  const head = [
    h('span', { class: 'step-number', text: `Step ${s.number}` }),
    actorBadge(s.actor || 'model'),
    h('span', { class: 'when', text: fmtTime(s.start_time) }),
    start !== null && end !== null ? h('span', { class: 'took', text: fmtDuration(end - start) }) : null,
    tokens ? h('span', { class: 'usage', text: `${fmtTokens(tokens)} tokens · ${fmtCost(u.cost_usd)}` }) : null,
    timings(s.timings),
  ];
  // A person's turn at the browser (a takeover) and a replayed step stand
  // apart from the model's steps.
  const actor = s.actor || 'model';
  const cls = actor === 'human' || actor === 'replay' ? `step ${actor}` : 'step';
  return h('li', { class: cls, dataset: { step: String(s.number), actor } },
    h('div', { class: 'step-head' }, head),
    h('div', { class: 'step-body' },
      s.screenshot_media_id
        ? thumbnail(s.screenshot_media_id, s.thumbnail_media_id, `Screenshot after step ${s.number}`)
        : h('div', { class: 'thumb none', text: 'no screenshot' }),
      h('div', { class: 'step-detail' },
        s.url || s.title ? h('div', { class: 'page' },
          h('span', { class: 'page-title', text: s.title || '' }), ' ', externalLink(s.url, 'page-url')) : null,
        s.reasoning ? clipped(s.reasoning, 1200, 'reasoning') : null,
        s.actions?.length ? h('ul', { class: 'actions' }, s.actions.map(action)) : null,
        s.verdict ? verdictLine(s.verdict) : null,
        s.error ? h('div', { class: 'error-box' },
          h('strong', { text: enumLabel(s.error.category, 'ERROR_CATEGORY_') || 'error' }), ': ',
          h('span', { text: s.error.message || '' })) : null,
        s.blocked_requests?.length ? h('details', { class: 'blocked' },
          h('summary', { text: `${s.blocked_requests.length} blocked request${s.blocked_requests.length > 1 ? 's' : ''}` }),
          h('ul', {}, s.blocked_requests.map((b) => h('li', {},
            h('span', { class: 'badge', text: b.kind || '' }), ' ',
            h('code', { text: b.url || b.host || '' }), ' ',
            h('span', { class: 'reason', text: `${b.reason || ''}${b.message ? ` — ${b.message}` : ''}` }))))) : null)));
}

function timings(t) {
  if (!t) return null;
  const parts = ['snapshot', 'model', 'action', 'judge']
    .map((k) => [k, durationMs(t[k])])
    .filter(([, ms]) => ms)
    .map(([k, ms]) => `${k} ${fmtDuration(ms)}`);
  return parts.length ? h('span', { class: 'timings', text: parts.join(' · ') }) : null;
}

// action renders one tool call: name, outcome, arguments, message, result.
function action(a) {
  const ok = a.outcome === 'ok';
  const args = a.arguments && Object.keys(a.arguments).length ? json(a.arguments) : '';
  return h('li', { class: 'action', dataset: { tool: a.tool || '', outcome: a.outcome || '' } },
    h('div', { class: 'action-head' },
      h('code', { class: 'tool', text: a.tool || '' }),
      a.outcome ? h('span', { class: `badge outcome ${ok ? 'ok' : 'bad'}`, text: a.outcome }) : null,
      a.strategy ? h('span', { class: 'strategy', text: `by ${a.strategy}` }) : null,
      durationMs(a.duration) ? h('span', { class: 'took', text: fmtDuration(durationMs(a.duration)) }) : null),
    args ? clipped(args, 300, 'args') : null,
    a.message ? h('div', { class: 'action-message', text: a.message }) : null,
    a.result && Object.keys(a.result).length ? h('details', { class: 'result' },
      h('summary', { text: 'result' }), h('pre', { text: JSON.stringify(a.result, null, 2) })) : null);
}

// progressCard is a step the run is working on; tool and judge events are
// added to it until the finished step replaces it.
export function progressCard(number) {
  return h('li', { class: 'step in-progress', dataset: { step: String(number) } },
    h('div', { class: 'step-head' },
      h('span', { class: 'step-number', text: `Step ${number}` }),
      h('span', { class: 'working', text: 'working…' })),
    h('ul', { class: 'progress' }));
}

// addProgress adds a TOOL_CALLED, TOOL_RESULT or JUDGE_VERDICT event to a
// step in progress.
export function addProgress(li, ev) {
  const list = li.querySelector('.progress');
  if (ev.type === 'RUN_EVENT_TYPE_JUDGE_VERDICT') {
    list.appendChild(h('li', {}, ev.verdict ? verdictLine(ev.verdict) : h('span', { text: ev.message || '' })));
    return;
  }
  const called = ev.type === 'RUN_EVENT_TYPE_TOOL_CALLED';
  const t = ev.tool || {};
  list.appendChild(h('li', { class: called ? 'called' : 'result' },
    h('code', { class: 'tool', text: t.tool || '' }),
    called ? h('span', { class: 'note', text: ' called' })
      : h('span', { class: `badge outcome ${t.outcome === 'ok' ? 'ok' : 'bad'}`, text: t.outcome || '' })));
}

// noteCard is a run event that is not a step (approval, cancel, requeue,
// auth, policy, takeover). An answered approval adds the approver's
// message.
export function noteCard(ev) {
  const a = ev.approval;
  const extra = a?.answer_time && a.message && !(ev.message || '').includes(a.message) ? `: "${a.message}"` : '';
  return h('li', { class: 'note-card', dataset: { event: ev.type } },
    h('span', { class: 'badge', text: enumLabel(ev.type, 'RUN_EVENT_TYPE_') }), ' ',
    h('span', { class: 'when', text: fmtTime(ev.time) }), ' ',
    h('span', { class: 'event-message', text: (ev.message || '') + extra }));
}
