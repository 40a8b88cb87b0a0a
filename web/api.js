// The REST API client: calls with the API key, screenshots, and the live
// feeds (a run's NDJSON event stream, a suite run's NDJSON watch stream,
// the tenant's SSE stream).

const KEY_STORAGE = 'wayfinder.apiKey';

// The key lives in sessionStorage only: it is gone when the tab closes and
// never shared with other tabs or written to disk by the page.
export function apiKey() {
  return sessionStorage.getItem(KEY_STORAGE) || '';
}

export function setAPIKey(key) {
  if (key) sessionStorage.setItem(KEY_STORAGE, key);
  else sessionStorage.removeItem(KEY_STORAGE);
  mediaCache.clear();
}

let authNeeded = () => {};

// onAuthNeeded registers what to do when the server answers 401 (ask for a
// key).
export function onAuthNeeded(fn) {
  authNeeded = fn;
}

// APIError is a failed call: the HTTP status and the server's message.
export class APIError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

function headers(extra) {
  const hs = { ...extra };
  const key = apiKey();
  if (key) hs.Authorization = `Bearer ${key}`;
  return hs;
}

async function failure(resp) {
  let message = `${resp.status} ${resp.statusText}`;
  try {
    const body = await resp.json();
    if (body && typeof body.message === 'string') message = body.message;
  } catch {
    // not JSON: keep the status line
  }
  if (resp.status === 401) authNeeded();
  return new APIError(resp.status, message);
}

// reportBug reports an error that is neither the server's answer nor an
// unreachable server (so a defect of the page) as uncaught: it shows in
// the console, and fails the tests.
export function reportBug(err) {
  if (!(err instanceof APIError) && err?.name !== 'AbortError') reportError(err);
}

// send is fetch with an unreachable server as an APIError (status 0).
async function send(path, init) {
  try {
    return await fetch(path, init);
  } catch (err) {
    if (err.name === 'AbortError') throw err;
    throw new APIError(0, `cannot reach the server (${err.message})`);
  }
}

// call sends a JSON request and returns the decoded answer.
export async function call(method, path, body, signal) {
  const init = { method, headers: headers(), signal };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const resp = await send(path, init);
  if (!resp.ok) throw await failure(resp);
  return resp.json();
}

// listAll follows next_page_token until the last page and returns the
// items under field.
export async function listAll(path, field, signal) {
  const out = [];
  let token = '';
  for (;;) {
    const sep = path.includes('?') ? '&' : '?';
    const page = await call('GET', token ? `${path}${sep}page_token=${encodeURIComponent(token)}` : path, undefined, signal);
    out.push(...(page[field] || []));
    token = page.next_page_token || '';
    if (!token) return out;
  }
}

export const runPath = (id) => `/v1/runs/${encodeURIComponent(id)}`;
export const mediaPath = (id) => `/v1/media/${encodeURIComponent(id)}`;
export const suiteRunPath = (id) => `/v1/suite-runs/${encodeURIComponent(id)}`;

// Screenshots fetched with a key become data: URLs (an <img> cannot send a
// header, and the page's CSP allows data: images but not blob:). Bounded,
// oldest out first.
const mediaCache = new Map();
const MEDIA_CACHE_SIZE = 200;

// setMediaSource points img at a stored screenshot.
export async function setMediaSource(img, id) {
  if (!apiKey()) {
    img.src = mediaPath(id);
    return;
  }
  let url = mediaCache.get(id);
  if (!url) {
    const resp = await send(mediaPath(id), { headers: headers() });
    if (!resp.ok) throw await failure(resp);
    const blob = await resp.blob();
    url = await new Promise((resolve, reject) => {
      const r = new FileReader();
      r.onload = () => resolve(r.result);
      r.onerror = () => reject(r.error);
      r.readAsDataURL(blob);
    });
    mediaCache.set(id, url);
    if (mediaCache.size > MEDIA_CACHE_SIZE) mediaCache.delete(mediaCache.keys().next().value);
  }
  img.src = url;
}

// sleep waits ms, or until signal aborts.
export const sleep = (ms, signal) => new Promise((resolve) => {
  const t = setTimeout(resolve, ms);
  signal?.addEventListener('abort', () => { clearTimeout(t); resolve(); }, { once: true });
});

// followRun reads a run's events (GET /v1/runs/{id}/events, one
// {"result": RunEvent} per line) after afterSequence and calls onEvent for
// each, reconnecting from the last sequence seen when the connection
// drops, until the FINISHED event or until signal aborts. The key travels
// in the Authorization header, never in a URL.
export async function followRun(id, afterSequence, onEvent, signal) {
  let seq = afterSequence;
  let backoff = 500;
  while (!signal.aborted) {
    try {
      const resp = await send(`${runPath(id)}/events?after_sequence=${seq}`, { headers: headers(), signal });
      if (!resp.ok) throw await failure(resp);
      backoff = 500;
      for await (const ev of results(resp.body, signal)) {
        seq = Math.max(seq, Number(ev.sequence));
        try {
          onEvent(ev);
        } catch (err) {
          reportBug(err); // the stream goes on
        }
        if (ev.type === 'RUN_EVENT_TYPE_FINISHED') return;
      }
    } catch (err) {
      if (signal.aborted) return;
      if (err instanceof APIError && (err.status === 401 || err.status === 404)) throw err;
    }
    await sleep(backoff, signal);
    backoff = Math.min(backoff * 2, 10000);
  }
}

// watchSuiteRun reads a suite run's watch stream (GET
// /v1/suite-runs/{id}:watch, one {"result": SuiteRun} per line: the suite
// run now, then after each change) and calls onSuiteRun for each, until
// the server ends the stream (after a final status) or signal aborts. A
// refused call or a broken stream throws (APIError): the caller decides
// whether to poll instead. Like followRun, the key travels in the
// Authorization header.
export async function watchSuiteRun(id, onSuiteRun, signal) {
  const resp = await send(`${suiteRunPath(id)}:watch`, { headers: headers(), signal });
  if (!resp.ok) throw await failure(resp);
  for await (const sr of results(resp.body, signal)) {
    try {
      onSuiteRun(sr);
    } catch (err) {
      reportBug(err); // the stream goes on
    }
  }
}

// results reads a grpc-gateway server stream: one {"result": message} or
// {"error": Status} per line. It yields the messages and throws the error.
async function* results(body, signal) {
  for await (const line of lines(body, signal)) {
    const msg = JSON.parse(line);
    if (msg.error) throw new APIError(500, msg.error.message || 'stream error');
    if (msg.result) yield msg.result;
  }
}

// lines splits a byte stream into lines.
async function* lines(body, signal) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += decoder.decode(value, { stream: true });
      let nl;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl).trim();
        buf = buf.slice(nl + 1);
        if (line) yield line;
      }
    }
    if (buf.trim()) yield buf.trim();
  } finally {
    if (!signal.aborted) reader.cancel().catch(() => {});
  }
}

// followLive reads a run's live view (GET /v1/runs/{id}/live:sse, one
// "event: frame" with a LiveFrame per picture) and calls onFrame for each,
// reconnecting while the run has no live view yet or the connection
// drops, until the run ends (the server answers 204) or signal aborts.
// onState is told "live", "waiting" (no live view yet, or reconnecting)
// with the reason. Like followRun, it reads the stream with fetch, so the
// key travels in the Authorization header, never in a URL.
export async function followLive(id, maxFPS, onFrame, onState, signal) {
  let backoff = 500;
  while (!signal.aborted) {
    let reason = '';
    try {
      const resp = await send(`${runPath(id)}/live:sse?max_fps=${maxFPS}`, { headers: headers(), signal });
      if (resp.status === 204) return; // the run ended
      if (!resp.ok) throw await failure(resp);
      onState('live', '');
      for await (const ev of sseEvents(resp.body, signal)) {
        if (ev.event === 'error') {
          let message = 'the live view stopped';
          try {
            message = JSON.parse(ev.data).message || message;
          } catch {
            // keep the generic message
          }
          throw new APIError(500, message);
        }
        if (ev.event !== 'frame') continue;
        backoff = 500;
        try {
          onFrame(JSON.parse(ev.data));
        } catch (err) {
          reportBug(err); // the stream goes on
        }
      }
    } catch (err) {
      if (signal.aborted) return;
      if (err instanceof APIError && (err.status === 401 || err.status === 404)) throw err;
      reason = err.message; // a dropped connection: try again
    }
    onState('waiting', reason);
    await sleep(backoff, signal);
    backoff = Math.min(backoff * 2, 5000);
  }
}

// sseEvents parses a Server-Sent Events byte stream into {event, data}.
async function* sseEvents(body, signal) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buf = '';
  let event = '';
  let data = [];
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buf += decoder.decode(value, { stream: true });
      let nl;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl).replace(/\r$/, '');
        buf = buf.slice(nl + 1);
        if (line === '') {
          if (data.length) yield { event: event || 'message', data: data.join('\n') };
          event = '';
          data = [];
        } else if (line.startsWith('event:')) {
          event = line.slice(6).trim();
        } else if (line.startsWith('data:')) {
          data.push(line.slice(line.startsWith('data: ') ? 6 : 5));
        }
        // comments (heartbeats), id: and retry: are not needed here
      }
    }
  } finally {
    if (!signal.aborted) reader.cancel().catch(() => {});
  }
}

// The tenant's event stream is Server-Sent Events (GET /v1/events:sse:
// "event: <RunEventType>", "data: <RunEvent>"), so the browser resumes it
// by itself (Last-Event-ID). An EventSource cannot send headers: the key
// goes in access_token.
const ALL_EVENTS = '/v1/events:sse';

const EVENT_TYPES = ['QUEUED', 'STARTED', 'STEP_STARTED', 'STEP_FINISHED', 'TOOL_CALLED', 'TOOL_RESULT',
  'JUDGE_VERDICT', 'APPROVAL_REQUESTED', 'APPROVAL_ANSWERED', 'CANCEL_REQUESTED', 'REQUEUED', 'FINISHED',
  'AUTH_APPLIED', 'POLICY', 'TAKEOVER'].map((n) => `RUN_EVENT_TYPE_${n}`);

// POLL_MS is how often the runs list is reloaded when the server has no
// event stream.
export const POLL_MS = 3000;

// followAll follows the events of all the tenant's runs. handlers:
// event(RunEvent), mode("live" | "reconnecting" | "polling"),
// resync() (on each (re)connection, or every POLL_MS while polling: reload
// the list, events may have been missed). It returns a function that stops
// it.
export function followAll(handlers) {
  let es = null;
  let timer = null;
  let stopped = false;

  const poll = () => {
    handlers.mode('polling');
    const tick = () => {
      if (stopped) return;
      handlers.resync();
      timer = setTimeout(tick, POLL_MS);
    };
    timer = setTimeout(tick, POLL_MS);
  };

  const onMessage = (m) => {
    let ev;
    try {
      ev = JSON.parse(m.data);
    } catch {
      return;
    }
    if (ev && ev.run_id) handlers.event(ev);
  };

  const open = () => {
    if (stopped) return;
    const key = apiKey();
    es = new EventSource(key ? `${ALL_EVENTS}?access_token=${encodeURIComponent(key)}` : ALL_EVENTS);
    for (const type of EVENT_TYPES) es.addEventListener(type, onMessage);
    es.addEventListener('open', () => {
      handlers.mode('live');
      handlers.resync(); // whatever happened while not connected
    });
    // "error" is both the connection's failure and the server's "event:
    // error" (a Status) before it ends the stream; either way the browser
    // reconnects unless the connection is closed for good.
    es.addEventListener('error', async () => {
      if (stopped) return;
      if (es.readyState !== EventSource.CLOSED) {
        handlers.mode('reconnecting'); // the browser retries by itself
        return;
      }
      // Closed for good: the answer was not a stream. Ask once more with
      // fetch to see why.
      es = null;
      const status = await probe();
      if (stopped) return;
      if (status === 404 || status === 405 || status === 501) {
        poll(); // a server without the stream
      } else if (status === 401) {
        handlers.mode('reconnecting');
        authNeeded();
      } else {
        handlers.mode('reconnecting');
        timer = setTimeout(open, POLL_MS);
      }
    });
  };

  open();
  return () => {
    stopped = true;
    clearTimeout(timer);
    es?.close();
  };
}

// probe returns the HTTP status of the stream endpoint (0 when it cannot be
// reached), reading no body.
async function probe() {
  const ctl = new AbortController();
  try {
    const resp = await fetch(ALL_EVENTS, { headers: headers(), signal: ctl.signal });
    return resp.status;
  } catch {
    return 0;
  } finally {
    ctl.abort();
  }
}
