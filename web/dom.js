// DOM building and formatting helpers. Every string that reaches the page
// goes through a text node or textContent: run goals, page titles, model
// reasoning and tool results are untrusted, so nothing here parses HTML.

// h builds an element. attrs: class, text, dataset, on (event listeners),
// and plain attributes (true sets an empty attribute; false, null and
// undefined skip it). Children are nodes, strings (as text), arrays or
// nothing.
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    switch (k) {
      case 'class': el.className = v; break;
      case 'text': el.textContent = String(v); break;
      case 'dataset': Object.assign(el.dataset, v); break;
      case 'on':
        for (const [type, fn] of Object.entries(v)) el.addEventListener(type, fn);
        break;
      default:
        if (/^on/i.test(k) || k === 'style') throw new Error(`h: attribute ${k} is not allowed`);
        el.setAttribute(k, v === true ? '' : String(v));
    }
  }
  append(el, children);
  return el;
}

// append adds children (nodes, strings, numbers, nested arrays) to el.
export function append(el, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else if (c instanceof Node) el.appendChild(c);
    else el.appendChild(document.createTextNode(String(c)));
  }
  return el;
}

// replace swaps the children of el for children.
export function replace(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

// safeURL returns u when it is an absolute http(s) URL, else null, so that
// a URL from a page never becomes a javascript: link.
export function safeURL(u) {
  try {
    const url = new URL(u);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.href : null;
  } catch {
    return null;
  }
}

// externalLink renders a URL from a run as a link when it is http(s), as
// text otherwise.
export function externalLink(u, cls) {
  const href = safeURL(u);
  if (!href) return h('span', { class: cls, text: u || '' });
  return h('a', { class: cls, href, target: '_blank', rel: 'noopener noreferrer', text: u });
}

const STATUS_LABELS = {
  RUN_STATUS_QUEUED: 'queued',
  RUN_STATUS_RUNNING: 'running',
  RUN_STATUS_AWAITING_APPROVAL: 'awaiting approval',
  RUN_STATUS_COMPLETED: 'completed',
  RUN_STATUS_FAILED: 'failed',
  RUN_STATUS_MAX_STEPS_REACHED: 'max steps',
  RUN_STATUS_ERROR: 'error',
  RUN_STATUS_CANCELLED: 'cancelled',
};

// STATUSES are the run statuses a filter can pick, in lifecycle order.
export const STATUSES = Object.keys(STATUS_LABELS);

// LIVE_STATUSES are the statuses a run can still leave.
export const LIVE_STATUSES = new Set(['RUN_STATUS_QUEUED', 'RUN_STATUS_RUNNING', 'RUN_STATUS_AWAITING_APPROVAL']);

export function statusLabel(s) {
  return STATUS_LABELS[s] || 'unknown';
}

// statusBadge is a colored status label; data-status carries the enum for
// styles and tests.
export function statusBadge(s) {
  return h('span', { class: 'badge status', dataset: { status: s || 'RUN_STATUS_UNSPECIFIED' }, text: statusLabel(s) });
}

// enumLabel turns ERROR_CATEGORY_NAVIGATION_TIMEOUT into "navigation timeout".
export function enumLabel(v, prefix) {
  if (!v) return '';
  return v.replace(prefix, '').toLowerCase().replaceAll('_', ' ');
}

// num reads an int64 (a JSON string over REST) or a number.
export function num(v) {
  const n = Number(v ?? 0);
  return Number.isFinite(n) ? n : 0;
}

// durationMs parses a protobuf JSON duration ("1.250s").
export function durationMs(d) {
  if (!d) return null;
  const m = /^(-?\d+(?:\.\d+)?)s$/.exec(d);
  return m ? Number(m[1]) * 1000 : null;
}

// timeMs parses a protobuf JSON timestamp.
export function timeMs(t) {
  if (!t) return null;
  const ms = Date.parse(t);
  return Number.isNaN(ms) ? null : ms;
}

export function fmtDuration(ms) {
  if (ms === null || ms === undefined || ms < 0) return '';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(s < 10 ? 1 : 0)} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} m ${String(Math.floor(s % 60)).padStart(2, '0')} s`;
  return `${Math.floor(m / 60)} h ${String(m % 60).padStart(2, '0')} m`;
}

export function fmtTime(t) {
  const ms = timeMs(t);
  if (ms === null) return '';
  const d = new Date(ms);
  const today = new Date().toDateString() === d.toDateString();
  return today ? d.toLocaleTimeString() : d.toLocaleString();
}

export function fmtTokens(n) {
  n = num(n);
  if (n < 1000) return String(n);
  if (n < 1e6) return `${(n / 1000).toFixed(n < 10000 ? 1 : 0)}k`;
  return `${(n / 1e6).toFixed(1)}M`;
}

export function fmtCost(usd) {
  usd = num(usd);
  if (usd === 0) return '$0';
  return usd < 0.01 ? `$${usd.toFixed(4)}` : `$${usd.toFixed(2)}`;
}

// runDuration is how long a run took, or has been going.
export function runDuration(run, now = Date.now()) {
  const start = timeMs(run.start_time);
  if (start === null) return null;
  const end = timeMs(run.end_time);
  return (end ?? now) - start;
}

// json renders a value compactly for display (arguments, results).
export function json(v) {
  if (v === undefined) return '';
  try {
    return JSON.stringify(v);
  } catch {
    return String(v);
  }
}

// clip shortens long text for compact views; the full text stays available
// through a <details> (see clipped).
export function clip(s, max) {
  s = String(s ?? '');
  return s.length <= max ? s : s.slice(0, max - 1) + '…';
}

// clipped renders text that may be long: the first max characters, and the
// whole text behind a disclosure.
export function clipped(s, max, cls = 'text') {
  s = String(s ?? '');
  if (s.length <= max) return h('div', { class: cls, text: s });
  return h('details', { class: cls },
    h('summary', { text: clip(s, max) }),
    h('div', { class: 'full', text: s }));
}
