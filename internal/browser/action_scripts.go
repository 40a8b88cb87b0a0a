package browser

// The page-side halves of the actions. Each is a function declaration for
// Runtime.callFunctionOn (this = the element, unless noted) built on jsLib,
// so every snippet shares one description of elements and one notion of
// text and visibility.

// jsLib defines helpers inside every snippet; nothing is left on the page.
const jsLib = `
const norm = s => String(s == null ? '' : s).replace(/\s+/g, ' ').trim().toLowerCase();
const parentOf = n => n.assignedSlot || n.parentNode || n.host || null;
const inside = (n, root) => { for (let x = n; x; x = parentOf(x)) { if (x === root) return true; } return false; };
const visible = el => {
  if (!el || !el.isConnected) return false;
  if (el.checkVisibility && !el.checkVisibility({visibilityProperty: true, checkVisibilityCSS: true})) return false;
  const r = el.getBoundingClientRect();
  return r.width > 0 && r.height > 0;
};
const describe = el => {
  if (!el) return '';
  if (el.nodeType !== 1) el = el.parentElement;
  if (!el) return '';
  let s = el.tagName.toLowerCase();
  if (el.id) s += '#' + el.id;
  if (typeof el.className === 'string' && el.className.trim()) s += '.' + el.className.trim().split(/\s+/).slice(0, 2).join('.');
  const role = el.getAttribute('role');
  if (role) s += '[role=' + role + ']';
  let name = el.getAttribute('aria-label') || el.getAttribute('title') || el.getAttribute('placeholder') || '';
  if (!name) name = (el.tagName === 'INPUT' ? el.value : (el.innerText || el.textContent)) || '';
  name = String(name).replace(/\s+/g, ' ').trim();
  if (name.length > 60) name = name.slice(0, 57) + '...';
  return name ? s + ' "' + name + '"' : s;
};
const deepAll = (root, sel) => {
  const out = [...root.querySelectorAll(sel)];
  for (const host of root.querySelectorAll('*')) if (host.shadowRoot) out.push(...deepAll(host.shadowRoot, sel));
  return out;
};
const pageText = () => {
  let t = document.body ? document.body.innerText : '';
  for (const host of deepAll(document, '*')) if (host.shadowRoot) t += ' ' + host.shadowRoot.textContent;
  return norm(t);
};
`

// jsFn wraps body, a function expression, into a declaration with jsLib in
// scope.
func jsFn(body string) string {
	return "function(...args) {" + jsLib + "return (" + body + ").apply(this, args); }"
}

// jsDescribe describes the element.
var jsDescribe = jsFn(`function() { return describe(this); }`)

// jsState reports what the pre-checks need about the element.
var jsState = jsFn(`function() {
  const el = this.nodeType === 1 ? this : this.parentElement;
  if (!el || !el.isConnected) return {connected: false};
  let hidden = '';
  if (el.checkVisibility && !el.checkVisibility()) hidden = 'it is hidden (display:none on it or an ancestor)';
  else if (el.checkVisibility && !el.checkVisibility({visibilityProperty: true, checkVisibilityCSS: true})) hidden = 'it is hidden (visibility:hidden)';
  else { const r = el.getBoundingClientRect(); if (r.width === 0 && r.height === 0) hidden = 'it has no size'; }
  const type = (el.getAttribute('type') || '').toLowerCase();
  const role = (el.getAttribute('role') || '').toLowerCase();
  const tag = el.tagName.toLowerCase();
  const textTypes = ['', 'text', 'search', 'email', 'url', 'tel', 'password', 'number'];
  const valueTypes = ['date', 'time', 'datetime-local', 'month', 'week', 'color', 'range'];
  let kind = 'other';
  if (tag === 'textarea' || (tag === 'input' && textTypes.includes(type))) kind = 'text';
  else if (tag === 'input' && valueTypes.includes(type)) kind = 'value';
  else if (el.isContentEditable) kind = 'editable';
  else if (tag === 'select') kind = 'select';
  else if (tag === 'input' && (type === 'checkbox' || type === 'radio')) kind = type;
  else if (tag === 'input' && type === 'file') kind = 'file';
  else if (tag === 'label') kind = 'label';
  let checked = null;
  if (kind === 'checkbox' || kind === 'radio') checked = el.checked;
  else if (el.hasAttribute('aria-checked')) checked = el.getAttribute('aria-checked') === 'true';
  else if (el.hasAttribute('aria-pressed')) checked = el.getAttribute('aria-pressed') === 'true';
  return {
    connected: true, hidden, tag, type, role, kind, checked,
    disabled: el.matches(':disabled') || !!el.closest('[aria-disabled="true"]'),
    readonly: el.readOnly === true || el.getAttribute('aria-readonly') === 'true',
    multiple: !!el.multiple,
    editable: el.isContentEditable || (tag === 'input' && textTypes.includes(type)) || tag === 'textarea',
    labelVisible: !!(el.labels && [...el.labels].some(visible)),
    desc: describe(el),
  };
}`)

// jsHit decides whether hit (the node at the click point) is the element,
// inside it, or inside one of its labels; otherwise it names the outermost
// element around hit that does not contain the target, which is what
// covers it.
var jsHit = jsFn(`function(hit) {
  if (inside(hit, this)) return {ok: true};
  if (this.labels && [...this.labels].some(l => inside(hit, l))) return {ok: true};
  let cover = hit.nodeType === 1 ? hit : hit.parentElement;
  while (cover) { const p = parentOf(cover); if (!p || p.nodeType !== 1 || inside(this, p)) break; cover = p; }
  return {ok: false, covering: describe(cover || hit)};
}`)

// jsMoving reports whether the element's box changes within two frames'
// time (an animation or transition still running). Without a running
// animation in its document it answers at once; otherwise it times with
// setTimeout, not requestAnimationFrame, which never fires in a tab that
// is not in front.
var jsMoving = jsFn(`function() {
  const doc = this.ownerDocument;
  if (!doc.getAnimations().some(a => a.playState === 'running')) return false;
  const box = () => { const r = this.getBoundingClientRect(); return [r.x, r.y, r.width, r.height]; };
  const a = box();
  return new Promise(resolve => setTimeout(() => { const b = box(); resolve(a.some((v, i) => Math.abs(v - b[i]) > 1)); }, 34));
}`)

// jsFindCSS returns the first visible element matching a CSS selector
// (open shadow roots included), else the first match, else null.
// Evaluated with (selector); this is unused.
var jsFindCSS = jsFn(`function(sel) {
  const all = deepAll(document, sel);
  return all.find(visible) || all[0] || null;
}`)

// jsFindText returns the element whose text best matches (case-insensitive;
// whole text before substring, visible before hidden, innermost first), or
// null.
var jsFindText = jsFn(`function(text) {
  const want = norm(text);
  if (!want) return null;
  const skip = new Set(['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE', 'HEAD', 'TITLE', 'HTML', 'BODY']);
  const own = el => (el.tagName === 'INPUT' && ['button', 'submit', 'reset'].includes(el.type)) ? norm(el.value) : norm(el.textContent);
  const hits = [];
  for (const el of deepAll(document, '*')) {
    if (skip.has(el.tagName)) continue;
    const t = own(el);
    if (!t.includes(want)) continue;
    // Keep only the innermost: skip el when a child element holds the text too.
    if ([...el.children].some(c => !skip.has(c.tagName) && own(c).includes(want))) continue;
    hits.push({el, exact: t === want, vis: visible(el)});
  }
  const rank = h => (h.vis ? 0 : 2) + (h.exact ? 0 : 1);
  hits.sort((a, b) => rank(a) - rank(b));
  return hits.length ? hits[0].el : null;
}`)

// jsFill prepares the element for text entry: focuses it and selects its
// content so that typing replaces it. Value-like inputs (date, color,
// range...) cannot be typed into and are set directly, as a user's picker
// would.
var jsFill = jsFn(`function(value, kind) {
  const el = this;
  el.focus();
  if (kind === 'value') {
    el.value = value;
    if (value !== '' && el.value === '') return {error: JSON.stringify(value) + ' is not a valid ' + el.type + ' value'};
    el.dispatchEvent(new Event('input', {bubbles: true}));
    el.dispatchEvent(new Event('change', {bubbles: true}));
    return {done: true};
  }
  if (kind === 'editable') {
    const r = document.createRange();
    r.selectNodeContents(el);
    const s = window.getSelection();
    s.removeAllRanges();
    s.addRange(r);
  } else {
    el.select();
  }
  return {done: false};
}`)

// jsValue reads the element's value (or text, for editable elements).
var jsValue = jsFn(`function() {
  if (this.isContentEditable) return this.innerText;
  if (this.tagName === 'SELECT') return [...this.selectedOptions].map(o => o.label).join(', ');
  if ('value' in this && this.tagName !== 'BUTTON' && this.tagName !== 'LI') return String(this.value);
  return (this.innerText || this.textContent || '').trim();
}`)

// jsFocus focuses the element.
var jsFocus = jsFn(`function() { this.focus(); return document.activeElement === this || inside(document.activeElement, this) || (this.shadowRoot && !!this.shadowRoot.activeElement); }`)

// jsSelectNative picks options of a <select> by value or label.
var jsSelectNative = jsFn(`function(wanted) {
  const el = this;
  const opts = [...el.options];
  const picked = [];
  for (const w of wanted) {
    const o = opts.find(o => o.value === w) || opts.find(o => o.label === w) ||
      opts.find(o => norm(o.label) === norm(w)) || opts.find(o => norm(o.label).includes(norm(w)));
    if (!o) return {missing: w, options: opts.slice(0, 30).map(o => o.label)};
    if (o.disabled) return {disabled: w};
    picked.push(o);
  }
  if (picked.length > 1 && !el.multiple) return {notMultiple: true};
  for (const o of opts) o.selected = picked.includes(o);
  el.dispatchEvent(new Event('input', {bubbles: true}));
  el.dispatchEvent(new Event('change', {bubbles: true}));
  return {value: picked.map(o => o.label).join(', ')};
}`)

// jsListbox returns the visible listbox a combobox controls (aria-controls
// or aria-owns, its own descendants, else the last visible listbox on the
// page), or null.
var jsListbox = jsFn(`function() {
  if ((this.getAttribute('role') || '') === 'listbox') return this;
  const ids = [this, ...this.querySelectorAll('[aria-controls],[aria-owns]')]
    .flatMap(e => ((e.getAttribute('aria-controls') || '') + ' ' + (e.getAttribute('aria-owns') || '')).split(/\s+/))
    .filter(Boolean);
  const root = this.getRootNode();
  for (const id of ids) {
    const lb = (root.getElementById ? root.getElementById(id) : null) || document.getElementById(id);
    if (lb && visible(lb)) return lb;
  }
  const own = [...this.querySelectorAll('[role=listbox]')].find(visible);
  if (own) return own;
  const all = deepAll(document, '[role=listbox]').filter(visible);
  return all.length ? all[all.length - 1] : null;
}`)

// jsOption finds the option of a listbox (this) matching the wanted text,
// or reports the options there are.
var jsOption = jsFn(`function(w) {
  const byOwns = (this.getAttribute('aria-owns') || '').split(/\s+/).filter(Boolean).map(id => document.getElementById(id)).filter(Boolean);
  const opts = [...deepAll(this, '[role=option]'), ...byOwns];
  const label = o => norm(o.getAttribute('aria-label') || o.textContent);
  const want = norm(w);
  const o = opts.find(o => label(o) === want) || opts.find(o => (o.getAttribute('data-value') || o.id) === w) ||
    opts.find(o => label(o).includes(want));
  if (o) return o;
  return null;
}`)

// jsOptionLabels lists a listbox's option labels (this = listbox).
var jsOptionLabels = jsFn(`function() {
  return deepAll(this, '[role=option]').slice(0, 30).map(o => (o.getAttribute('aria-label') || o.textContent).replace(/\s+/g, ' ').trim());
}`)

// jsScroll scrolls the element's scroll container (or, with no element,
// the page; or, when the page itself does not scroll, its largest
// scrollable element) and reports where it is. Called on an element, or
// evaluated with this = undefined for the page.
var jsScroll = jsFn(`function(dir, amount) {
  const vertical = ['up', 'down', 'top', 'bottom'].includes(dir);
  const se = document.scrollingElement || document.documentElement;
  const room = e => vertical ? e.scrollHeight - e.clientHeight : e.scrollWidth - e.clientWidth;
  const can = e => {
    if (!e || e.nodeType !== 1) return false;
    if (e === se) return room(e) > 0;
    const s = getComputedStyle(e);
    return /(auto|scroll|overlay)/.test(vertical ? s.overflowY : s.overflowX) && room(e) > 0;
  };
  let c = null;
  const el = this && this.nodeType === 1 ? this : null;
  if (el) for (let x = el; x && !c; x = parentOf(x)) if (can(x)) c = x;
  if (!c && can(se)) c = se;
  if (!c) {
    let area = 0;
    for (const e of deepAll(document, '*')) {
      if (e === se || !can(e)) continue;
      const r = e.getBoundingClientRect();
      if (r.width * r.height > area) { area = r.width * r.height; c = e; }
    }
  }
  if (!c) return {none: true};
  const before = [c.scrollLeft, c.scrollTop];
  const by = {up: [0, -amount], down: [0, amount], left: [-amount, 0], right: [amount, 0]}[dir];
  if (by) c.scrollBy({left: by[0], top: by[1], behavior: 'instant'});
  else if (dir === 'top') c.scrollTo({top: 0, behavior: 'instant'});
  else if (dir === 'bottom') c.scrollTo({top: c.scrollHeight, behavior: 'instant'});
  return {
    container: c === se ? 'page' : describe(c),
    x: c.scrollLeft, y: c.scrollTop,
    max_x: c.scrollWidth - c.clientWidth, max_y: c.scrollHeight - c.clientHeight,
    moved: before[0] !== c.scrollLeft || before[1] !== c.scrollTop,
  };
}`)

// jsScrollIntoView centres the element in its scroll containers.
var jsScrollIntoView = jsFn(`function() {
  this.scrollIntoView({block: 'center', inline: 'center', behavior: 'instant'});
  const se = document.scrollingElement || document.documentElement;
  return {container: 'page', x: se.scrollLeft, y: se.scrollTop, max_x: se.scrollWidth - se.clientWidth, max_y: se.scrollHeight - se.clientHeight, moved: true};
}`)

// jsWaitText resolves true once the page's text contains the wanted text
// (case-insensitive), false after timeoutMs. Mutations trigger a check
// (at most every 50 ms); a slow poll covers text in shadow roots, which a
// document observer does not see.
var jsWaitText = jsFn(`function(text, timeoutMs, gone) {
  const want = norm(text);
  const ok = () => pageText().includes(want) !== gone;
  return new Promise(resolve => {
    if (ok()) return resolve(true);
    let pending = false;
    const done = v => { obs.disconnect(); clearTimeout(timer); clearInterval(poll); resolve(v); };
    const check = () => { pending = false; if (ok()) done(true); };
    const obs = new MutationObserver(() => { if (!pending) { pending = true; setTimeout(check, 50); } });
    obs.observe(document, {subtree: true, childList: true, characterData: true});
    const poll = setInterval(check, 250);
    const timer = setTimeout(() => done(ok()), timeoutMs);
  });
}`)

// jsObserve starts watching the document (and open shadow roots) for
// mutations and returns a probe: probe.wait(quietMs, maxMs) resolves once
// nothing changed for quietMs (true) or after maxMs (false);
// probe.stop() disconnects it. Evaluated as an expression.
var jsObserve = `(() => {` + jsLib + `
  let last = performance.now(), count = 0;
  const mo = new MutationObserver(recs => {
    last = performance.now();
    count += recs.length;
    for (const r of recs) for (const n of r.addedNodes) if (n.nodeType === 1) watchShadows(n);
  });
  const seen = new WeakSet();
  const watchShadows = root => {
    const hosts = root.shadowRoot ? [root] : [];
    if (root.querySelectorAll) for (const h of deepAll(root, '*')) if (h.shadowRoot) hosts.push(h);
    for (const h of hosts) if (!seen.has(h.shadowRoot)) { seen.add(h.shadowRoot); mo.observe(h.shadowRoot, opts); }
  };
  const opts = {subtree: true, childList: true, attributes: true, characterData: true};
  mo.observe(document, opts);
  watchShadows(document.documentElement);
  return {
    wait(quiet, max) {
      const end = performance.now() + max;
      return new Promise(resolve => {
        const tick = () => {
          const now = performance.now();
          if (now - last >= quiet) resolve({quiet: true, mutations: count});
          else if (now >= end) resolve({quiet: false, mutations: count});
          else setTimeout(tick, Math.max(1, Math.min(quiet - (now - last), end - now)));
        };
        tick();
      });
    },
    stop() { mo.disconnect(); },
  };
})()`

// jsExtract reads rows of fields (evaluated with (rowSelector, fields,
// limit)). A field selector "css" reads the text of the first match in the
// row, "css@attr" its attribute (href and src resolved to absolute URLs),
// "@attr" and "" read the row itself.
var jsExtract = jsFn(`function(rowSel, fields, limit) {
  const rows = deepAll(document, rowSel);
  const text = e => (e.innerText || e.textContent || '').replace(/\s+/g, ' ').trim();
  const read = (row, spec) => {
    let sel = spec, attr = '';
    const at = spec.lastIndexOf('@');
    if (at >= 0 && !spec.slice(at).includes(']')) { sel = spec.slice(0, at).trim(); attr = spec.slice(at + 1).trim(); }
    const e = sel === '' || sel === '.' ? row : (row.querySelector(sel) || (row.shadowRoot && row.shadowRoot.querySelector(sel)));
    if (!e) return '';
    if (!attr) return text(e);
    if ((attr === 'href' || attr === 'src') && typeof e[attr] === 'string') return e[attr];
    return e.getAttribute(attr) || '';
  };
  const out = rows.slice(0, limit).map(row => {
    const o = {};
    for (const [k, spec] of Object.entries(fields)) o[k] = read(row, spec);
    return o;
  });
  return {rows: out, matched: rows.length};
}`)
