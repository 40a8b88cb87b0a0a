// A run's prompt runs: every model call with its request (rendered
// compactly), answer, tokens, cost, latency, error and the screenshots the
// model saw.

import { listAll, reportBug, runPath } from './api.js';
import { clipped, durationMs, fmtCost, fmtDuration, fmtTime, fmtTokens, h, json, num, replace } from './dom.js';
import { thumbnail } from './media.js';

// OPEN_MESSAGES is how many of a request's last messages are shown open;
// the earlier ones (repeated from the previous calls) are folded.
const OPEN_MESSAGES = 2;

export function promptRunsView(runId) {
  const abort = new AbortController();
  const list = h('div', { class: 'prompt-runs' });
  const status = h('p', { class: 'message', hidden: true });
  const reload = h('button', { type: 'button', class: 'reload', on: { click: load } }, 'Reload');
  const el = h('div', {}, h('div', { class: 'toolbar' }, reload), status, list);

  async function load() {
    reload.disabled = true;
    try {
      const prs = await listAll(`${runPath(runId)}/prompt-runs?page_size=200`, 'prompt_runs', abort.signal);
      status.hidden = prs.length > 0;
      status.textContent = 'No model calls yet.';
      replace(list, prs.map(promptRun));
    } catch (err) {
      reportBug(err);
      if (abort.signal.aborted) return;
      status.hidden = false;
      status.textContent = `Could not load the prompt runs: ${err.message}`;
    } finally {
      reload.disabled = false;
    }
  }

  load();
  return { el, dispose: () => abort.abort() };
}

function promptRun(pr) {
  const u = pr.usage || {};
  const req = pr.request || {};
  const msgs = req.messages || [];
  const folded = msgs.slice(0, Math.max(0, msgs.length - OPEN_MESSAGES));
  const open = msgs.slice(folded.length);
  return h('article', { class: 'prompt-run', dataset: { role: pr.role || '', promptRunId: pr.id } },
    h('header', {},
      h('span', { class: 'step-number', text: `Step ${pr.step_number || 0}` }),
      h('span', { class: 'badge role', text: pr.role || '' }),
      h('code', { class: 'model', text: [pr.provider, pr.model].filter(Boolean).join(' / ') }),
      h('span', { class: 'usage', text: `${fmtTokens(u.input_tokens)} in · ${fmtTokens(u.output_tokens)} out` +
        (num(u.cached_input_tokens) ? ` · ${fmtTokens(u.cached_input_tokens)} cached` : '') + ` · ${fmtCost(u.cost_usd)}` }),
      h('span', { class: 'took', text: fmtDuration(durationMs(pr.latency)) }),
      h('span', { class: 'when', text: fmtTime(pr.start_time) })),
    pr.error ? h('div', { class: 'error-box', text: pr.error }) : null,
    req.system ? h('details', { class: 'system' },
      h('summary', { text: `System prompt (${req.system.length} characters)` }),
      h('pre', { text: req.system })) : null,
    req.tools?.length ? h('div', { class: 'tools-offered', text: `Tools: ${req.tools.map((t) => t.name).join(', ')}` }) : null,
    folded.length ? h('details', { class: 'earlier' },
      h('summary', { text: `${folded.length} earlier message${folded.length > 1 ? 's' : ''}` }),
      h('ol', { class: 'messages' }, folded.map(message))) : null,
    h('ol', { class: 'messages' }, open.map(message)),
    pr.response ? h('div', { class: 'msg response' },
      h('span', { class: 'badge role', text: 'answer' }),
      h('div', { class: 'parts' },
        pr.response.text ? clipped(pr.response.text, 600) : null,
        (pr.response.tool_calls || []).map(toolCall),
        pr.response.stop_reason ? h('span', { class: 'note', text: `stop: ${pr.response.stop_reason}` }) : null)) : null,
    pr.media_ids?.length ? h('div', { class: 'media-strip' },
      h('span', { class: 'note', text: 'Screenshots sent:' }),
      pr.media_ids.map((m) => thumbnail(m, '', 'Screenshot the model saw'))) : null);
}

function message(m) {
  return h('li', { class: 'msg', dataset: { role: m.role || '' } },
    h('span', { class: 'badge role', text: m.role || '' }),
    h('div', { class: 'parts' }, (m.parts || []).map(part)));
}

function part(p) {
  if (p.text !== undefined) return clipped(p.text, 400);
  if (p.image) return p.image.ref ? thumbnail(p.image.ref, '', 'Image in the prompt') : h('span', { class: 'note', text: '[image]' });
  if (p.tool_call) return toolCall(p.tool_call);
  if (p.tool_result) {
    const r = p.tool_result;
    return h('div', { class: `tool-result${r.is_error ? ' bad' : ''}` },
      h('code', { class: 'tool', text: `↳ ${r.name || r.call_id || ''}` }), ' ',
      clipped(r.content, 300, 'text inline'),
      (r.images || []).map((img) => img.ref ? thumbnail(img.ref, '', 'Screenshot with the tool result') : null));
  }
  return null;
}

function toolCall(c) {
  const args = typeof c.arguments === 'string' ? c.arguments : json(c.arguments);
  return h('div', { class: 'tool-call' }, h('code', { class: 'tool', text: c.name || '' }), ' ', clipped(args, 300, 'args inline'));
}
