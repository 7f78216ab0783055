// The page's only way to the server: the public JSON API (docs/api.md), one
// request at a time. Every call waits for the one before it, so the page
// never races itself on a session; a 409 "busy" (another client, or a
// request of ours the server has not finished releasing) is retried after a
// short wait and never shown.

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export class ApiError extends Error {
  constructor(status, code, message, details) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = details || {};
  }
}

const TOKEN_KEY = 'dgenv-token';

export class Api {
  constructor() {
    this.token = sessionStorage.getItem(TOKEN_KEY) || '';
    this.queue = Promise.resolve();
    this.inFlight = 0;
    this.sent = 0;
  }

  setToken(t) {
    this.token = t;
    if (t) sessionStorage.setItem(TOKEN_KEY, t);
    else sessionStorage.removeItem(TOKEN_KEY);
  }

  // request queues one call; it starts when every earlier call has ended.
  // A body is sent as JSON; raw is sent as it is (JSON text the page must
  // not re-encode: a saved record's 64-bit seed would lose its low bits).
  request(method, path, body, raw) {
    const run = () => this.send(method, path, body, raw);
    const p = this.queue.then(run, run);
    this.queue = p.catch(() => {});
    return p;
  }

  async send(method, path, body, raw) {
    for (let attempt = 1; ; attempt++) {
      const headers = { Accept: 'application/json' };
      if (body !== undefined || raw !== undefined) headers['Content-Type'] = 'application/json';
      if (this.token) headers.Authorization = `Bearer ${this.token}`;
      let res;
      let text;
      this.inFlight++;
      this.sent++;
      try {
        res = await fetch(path, {
          method, headers, cache: 'no-store',
          body: raw !== undefined ? raw : body === undefined ? undefined : JSON.stringify(body),
        });
        text = await res.text();
      } catch (e) {
        throw new ApiError(0, 'network', `cannot reach the server (${e.message})`);
      } finally {
        this.inFlight--;
      }
      let data = null;
      try {
        data = text ? JSON.parse(text) : null;
      } catch {
        data = null;
      }
      if (res.ok) return data;
      const e = (data && data.error) || { code: `http_${res.status}`, message: text.slice(0, 200) || res.statusText };
      if (res.status === 409 && e.code === 'busy' && attempt < 30) {
        await sleep(Math.min(50 * attempt, 500));
        continue;
      }
      if (res.status === 429 && attempt < 4) {
        const after = Number(res.headers.get('Retry-After')) || 1;
        await sleep(Math.min(after, 5) * 1000);
        continue;
      }
      throw new ApiError(res.status, e.code, e.message, e);
    }
  }

  get(path) { return this.request('GET', path); }
  post(path, body) { return this.request('POST', path, body === undefined ? {} : body); }
  postText(path, text) { return this.request('POST', path, undefined, text); }
  del(path) { return this.request('DELETE', path); }

  // forget ends a session when the page goes away, without waiting.
  forget(path) {
    const headers = {};
    if (this.token) headers.Authorization = `Bearer ${this.token}`;
    try {
      fetch(path, { method: 'DELETE', headers, keepalive: true });
    } catch {
      // the session expires on its own (limits.session_ttl)
    }
  }
}
