// The live view of a running run: its browser's screen as it changes, and
// the takeover — a person asks for the browser, drives the run's page with
// mouse and keyboard on the picture, and hands it back with a note to the
// model.

import { call, followLive, reportBug, runPath } from './api.js';
import { externalLink, h, replace } from './dom.js';

// MAX_FPS is the frame rate asked for.
const MAX_FPS = 10;
// MOVE_MS spaces pointer moves (at most about 30 a second).
const MOVE_MS = 34;
// BATCH_MS is the longest input waits before it is sent.
const BATCH_MS = 50;
// MAX_BATCH is the most events one call carries (the API's limit).
const MAX_BATCH = 200;
// MAX_TEXT is the most characters one text event carries.
const MAX_TEXT = 2000;

const REQUESTED = 'TAKEOVER_STATE_REQUESTED';
const ACTIVE = 'TAKEOVER_STATE_ACTIVE';
const ENDED = 'TAKEOVER_STATE_ENDED';
const RANK = { [REQUESTED]: 1, [ACTIVE]: 2, [ENDED]: 3 };

const END_REASONS = {
  handed_back: 'handed back',
  withdrawn: 'withdrawn',
  idle: 'ended after no input for too long',
  run_ended: 'ended with the run',
};

const BUTTONS = ['BUTTON_LEFT', 'BUTTON_MIDDLE', 'BUTTON_RIGHT'];

// modifiers is the API's bit field (Alt=1, Ctrl=2, Meta=4, Shift=8).
const modifiers = (e) => (e.altKey ? 1 : 0) | (e.ctrlKey ? 2 : 0) | (e.metaKey ? 4 : 0) | (e.shiftKey ? 8 : 0);

// livePanel renders run id's live view. setTakeover(t, fromRun) tells it
// the run's open takeover (from GetRun, with fromRun: none clears it) or
// one from an event or answer (newer states only); dispose stops it.
export function livePanel(id) {
  const abort = new AbortController();
  const signal = abort.signal;

  let frame = null; // the newest LiveFrame's size: {width, height}
  let takeover = null; // the open takeover (REQUESTED or ACTIVE), or null
  const seen = new Map(); // takeover ID → the furthest state seen
  let capturing = false;
  let endedLine = ''; // how the last takeover ended

  const img = h('img', { class: 'live-image', alt: 'The run’s browser, live', draggable: 'false' });
  const screen = h('div', {
    class: 'live-screen', tabindex: '0', role: 'application',
    'aria-label': 'Live view of the run’s browser', 'aria-busy': 'true',
  }, img, h('p', { class: 'live-waiting', text: 'Waiting for the first picture…' }));
  const stateLine = h('span', { class: 'live-state' });
  const pageLine = h('div', { class: 'live-url' });
  const error = h('p', { class: 'field-error', hidden: true });
  const takeButton = h('button', { type: 'button', class: 'primary take-over', on: { click: takeOver } }, 'Take over');
  const withdrawButton = h('button', { type: 'button', class: 'withdraw', on: { click: () => handBack(false) } }, 'Cancel request');
  const note = h('textarea', {
    name: 'note', rows: '2', maxlength: '2000', 'aria-label': 'Note to the model',
    placeholder: 'What did you do? The model reads this.',
  });
  const handBackButton = h('button', { type: 'submit', class: 'primary hand-back' }, 'Hand back');
  const handBackForm = h('form', { class: 'hand-back-form', hidden: true, on: { submit: (e) => { e.preventDefault(); handBack(true); } } },
    note, handBackButton);
  const controls = h('div', { class: 'live-controls' }, stateLine, takeButton, withdrawButton);
  const el = h('section', { class: 'live-panel', dataset: { takeover: 'none' } },
    h('div', { class: 'live-head' }, h('h2', { text: 'Live view' }), controls),
    pageLine, screen, handBackForm, error);

  const showError = (text) => {
    error.hidden = !text;
    error.textContent = text || '';
  };

  // --- frames -------------------------------------------------------------

  let shownURL = null;
  function onFrame(f) {
    if (f.data) img.src = `data:image/jpeg;base64,${f.data}`;
    const width = Number(f.width) || 0;
    const height = Number(f.height) || 0;
    if (width > 0 && height > 0) {
      frame = { width, height };
      screen.dataset.width = String(width);
      screen.dataset.height = String(height);
    }
    screen.dataset.sequence = String(f.sequence || '0');
    screen.removeAttribute('aria-busy');
    if ((f.url || '') !== shownURL) {
      shownURL = f.url || '';
      replace(pageLine, shownURL ? externalLink(shownURL, 'page-url') : null);
    }
    if (f.takeover) setTakeover(f.takeover, false);
  }

  function onState(state, reason) {
    screen.dataset.connection = state;
    if (state === 'waiting' && reason) stateLine.title = reason;
  }

  // --- takeover state -----------------------------------------------------

  // setTakeover applies what a source says about the open takeover. A
  // state is never taken back (an older answer cannot undo a newer one);
  // only the run itself says that none is open.
  function setTakeover(t, fromRun) {
    if (!t || !t.id) {
      if (fromRun && takeover) {
        takeover = null;
        render();
      }
      return;
    }
    const rank = RANK[t.state] || 0;
    if (rank < (seen.get(t.id) || 0)) return;
    seen.set(t.id, rank);
    if (t.state === ENDED) {
      if (takeover?.id === t.id) takeover = null;
      endedLine = `Takeover ${END_REASONS[t.end_reason] || 'ended'}.`;
    } else {
      takeover = t;
    }
    render();
  }

  function render() {
    const state = takeover?.state || 'none';
    el.dataset.takeover = state;
    takeButton.hidden = Boolean(takeover);
    withdrawButton.hidden = state !== REQUESTED;
    handBackForm.hidden = state !== ACTIVE;
    if (state === REQUESTED) {
      stateLine.textContent = 'Taking over: the run pauses after its current step…';
    } else if (state === ACTIVE) {
      stateLine.textContent = 'You have the browser. Click and type on the picture; the model waits.';
    } else {
      stateLine.textContent = endedLine || 'The model has the browser.';
    }
    setCapturing(state === ACTIVE);
  }

  function setCapturing(on) {
    if (on === capturing) return;
    capturing = on;
    screen.classList.toggle('capturing', on);
    if (on) {
      screen.focus();
    } else {
      pendingMove = null;
      queue.length = 0;
    }
  }

  // --- takeover calls -----------------------------------------------------

  async function takeOver() {
    takeButton.disabled = true;
    showError('');
    endedLine = '';
    try {
      setTakeover(await call('POST', `${runPath(id)}:takeover`, {}, signal), false);
    } catch (err) {
      reportBug(err);
      if (!signal.aborted) showError(`Could not take over: ${err.message}`);
    } finally {
      takeButton.disabled = false;
    }
  }

  // handBack returns the browser (withNote: with the note), after the
  // input typed so far has been sent; on a REQUESTED takeover it withdraws
  // the request.
  async function handBack(withNote) {
    const t = takeover;
    if (!t) return;
    handBackButton.disabled = true;
    withdrawButton.disabled = true;
    showError('');
    try {
      await drain();
      const body = { takeover_id: t.id };
      if (withNote && note.value.trim()) body.note = note.value.trim();
      setTakeover(await call('POST', `${runPath(id)}:handback`, body, signal), false);
      note.value = '';
    } catch (err) {
      reportBug(err);
      if (!signal.aborted) showError(`Could not hand back: ${err.message}`);
    } finally {
      handBackButton.disabled = false;
      withdrawButton.disabled = false;
    }
  }

  // --- input --------------------------------------------------------------

  // Events wait in queue and go out in order, at most MAX_BATCH a call,
  // one call at a time.
  const queue = [];
  let flushTimer = null;
  let inFlight = null;

  function enqueue(ev) {
    if (!capturing) return;
    queue.push(ev);
    if (!flushTimer && !inFlight) flushTimer = setTimeout(flush, BATCH_MS);
  }

  function flush() {
    clearTimeout(flushTimer);
    flushTimer = null;
    if (inFlight || !queue.length || !takeover || takeover.state !== ACTIVE) return;
    const body = { takeover_id: takeover.id, events: queue.splice(0, MAX_BATCH) };
    inFlight = call('POST', `${runPath(id)}/live:input`, body, signal)
      .catch((err) => {
        reportBug(err);
        if (signal.aborted) return;
        queue.length = 0; // the takeover is over, or the input was refused
        showError(`Input not delivered: ${err.message}`);
      })
      .finally(() => {
        inFlight = null;
        if (queue.length) flush(); // what came meanwhile, at once
      });
  }

  // drain sends what is queued and waits for it.
  async function drain() {
    sendMove();
    while (!signal.aborted && (queue.length || inFlight)) {
      if (!inFlight) flush();
      if (!inFlight) break;
      await inFlight;
    }
  }

  // point converts a pointer position on the picture to the viewport's CSS
  // pixels.
  function point(e) {
    const r = img.getBoundingClientRect();
    if (!frame || r.width <= 0 || r.height <= 0) return null;
    const clamp = (v, max) => Math.min(Math.max(v, 0), max);
    return {
      x: Math.round(clamp(((e.clientX - r.left) * frame.width) / r.width, frame.width) * 100) / 100,
      y: Math.round(clamp(((e.clientY - r.top) * frame.height) / r.height, frame.height) * 100) / 100,
    };
  }

  let pendingMove = null;
  let moveTimer = null;
  let lastMove = 0;

  function sendMove() {
    clearTimeout(moveTimer);
    moveTimer = null;
    if (!pendingMove) return;
    lastMove = performance.now();
    enqueue({ mouse: pendingMove });
    pendingMove = null;
  }

  function onMove(e) {
    if (!capturing) return;
    const p = point(e);
    if (!p) return;
    pendingMove = { type: 'TYPE_MOVE', ...p, modifiers: modifiers(e) };
    if (!moveTimer) moveTimer = setTimeout(sendMove, Math.max(0, lastMove + MOVE_MS - performance.now()));
  }

  function onButton(e, type) {
    if (!capturing) return;
    e.preventDefault(); // no dragging of the picture, no selection
    if (type === 'TYPE_DOWN') screen.focus();
    const p = point(e);
    if (!p) return;
    // The press carries its position: a move waiting to go out is stale.
    clearTimeout(moveTimer);
    moveTimer = null;
    pendingMove = null;
    enqueue({
      mouse: {
        type, ...p, button: BUTTONS[e.button] || 'BUTTON_LEFT', click_count: Math.max(1, e.detail || 1),
        modifiers: modifiers(e),
      },
    });
  }

  function onWheel(e) {
    if (!capturing) return;
    e.preventDefault(); // the dashboard does not scroll
    const p = point(e);
    if (!p || !frame) return;
    const scale = e.deltaMode === 1 ? 16 : e.deltaMode === 2 ? frame.height : 1;
    const dx = e.deltaX * scale;
    const dy = e.deltaY * scale;
    const last = queue[queue.length - 1];
    if (last?.mouse?.type === 'TYPE_WHEEL') {
      last.mouse.delta_x += dx; // coalesce with the waiting scroll
      last.mouse.delta_y += dy;
      return;
    }
    sendMove();
    enqueue({ mouse: { type: 'TYPE_WHEEL', ...p, delta_x: dx, delta_y: dy, modifiers: modifiers(e) } });
  }

  // isPaste is Ctrl+V / Cmd+V, left to the browser so that a paste event
  // brings the clipboard's text.
  const isPaste = (e) => (e.ctrlKey || e.metaKey) && (e.key === 'v' || e.key === 'V');

  function onKey(e, type) {
    // Keys of an input method's composition are not the text it makes:
    // that comes with compositionend.
    if (!capturing || e.isComposing || e.keyCode === 229) return;
    if (isPaste(e)) return;
    e.preventDefault(); // the dashboard itself does not react
    e.stopPropagation();
    if (!e.key || e.key.length > 32 || (e.code || '').length > 32) return;
    sendMove();
    enqueue({ key: { type, key: e.key, code: e.code || '', modifiers: modifiers(e) } });
  }

  function onPaste(e) {
    if (!capturing) return;
    e.preventDefault();
    const text = e.clipboardData?.getData('text/plain') || '';
    sendMove();
    for (let i = 0; i < text.length; i += MAX_TEXT) enqueue({ text: text.slice(i, i + MAX_TEXT) });
  }

  // onCompositionEnd sends what an input method composed (CJK, dead-key
  // sequences) as text: its keys were left out above.
  function onCompositionEnd(e) {
    if (!capturing || !e.data) return;
    sendMove();
    for (let i = 0; i < e.data.length; i += MAX_TEXT) enqueue({ text: e.data.slice(i, i + MAX_TEXT) });
  }

  img.addEventListener('mousedown', (e) => onButton(e, 'TYPE_DOWN'));
  img.addEventListener('mouseup', (e) => onButton(e, 'TYPE_UP'));
  img.addEventListener('mousemove', onMove);
  img.addEventListener('wheel', onWheel, { passive: false });
  img.addEventListener('dragstart', (e) => e.preventDefault());
  img.addEventListener('contextmenu', (e) => { if (capturing) e.preventDefault(); });
  screen.addEventListener('keydown', (e) => onKey(e, 'TYPE_DOWN'));
  screen.addEventListener('keyup', (e) => onKey(e, 'TYPE_UP'));
  screen.addEventListener('paste', onPaste);
  screen.addEventListener('compositionend', onCompositionEnd);

  // --- start --------------------------------------------------------------

  render();
  followLive(id, MAX_FPS, onFrame, onState, signal).catch((err) => {
    reportBug(err);
    if (!signal.aborted) showError(`No live view: ${err.message}`);
  });

  return {
    el,
    setTakeover,
    dispose() {
      abort.abort();
      clearTimeout(flushTimer);
      clearTimeout(moveTimer);
      setCapturing(false);
    },
  };
}
