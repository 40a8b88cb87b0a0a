// A judge verdict, in one line plus its reason and feedback.

import { h, num } from './dom.js';

// verdictLine renders a judge verdict in one line plus its feedback.
export function verdictLine(v) {
  const state = v.failed ? 'cannot be met' : v.done ? 'done' : 'not done';
  return h('div', { class: 'verdict', dataset: { done: String(Boolean(v.done)), failed: String(Boolean(v.failed)) } },
    h('span', { class: 'verdict-state', text: `Judge${v.source ? ` (${v.source})` : ''}: ${state}` }),
    v.confidence !== undefined ? h('span', { class: 'confidence', text: ` · confidence ${num(v.confidence).toFixed(2)}` }) : null,
    v.reason ? h('div', { class: 'reason', text: v.reason }) : null,
    v.feedback ? h('div', { class: 'feedback', text: `Feedback: ${v.feedback}` }) : null,
    v.suggested_next_action ? h('div', { class: 'suggestion', text: `Suggested: ${v.suggested_next_action}` }) : null);
}
