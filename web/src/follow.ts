// The resume logic of every live stream the dashboard follows: a
// workflow's events (GET /v1/workflows/{id}/ws) and the tenant's feed
// (GET /v1/ws). The gateway numbers stored events by offset, strictly
// increasing within an epoch; a client keeps (offset, epoch), reconnects
// from them after any drop, drops what it has already seen, and is told by a
// `reset` frame when its cursor is void — which the page must show.

/** One frame as the gateway sends it over WebSocket (and SSE data). */
export interface Frame {
  offset: number;
  epoch?: string;
  type: string;
  workflow_id?: string;
  tenant_id?: string;
  time?: string;
  step_id?: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  data?: any;
}

/** What a frame means to the follower. */
export type Verdict =
  | 'connected' // a new connection opened; nothing to show
  | 'event' // a stored event not seen before: show it
  | 'duplicate' // already seen (a resume overlapping the last connection): drop it
  | 'reset' // the cursor was void: show it, reload state, go on from resume_from
  | 'other'; // an unnumbered answer (control_result, frame_error)

/**
 * Cursor is a follower's position: the last offset shown and the epoch it
 * belongs to. It decides what each frame means and where to reconnect.
 */
export class Cursor {
  offset: number;
  epoch: string;

  constructor(offset = 0, epoch = '') {
    this.offset = offset;
    this.epoch = epoch;
  }

  /** accept classifies f and moves the cursor past it when it is new. */
  accept(f: Frame): Verdict {
    switch (f.type) {
      case 'connected': {
        const e = f.data?.epoch ?? f.epoch;
        // A different epoch is answered by a reset frame right after this
        // one; until then the old offset must not be trusted either way.
        if (e) this.epoch = e;
        // The stream starts after `from`: a feed opened without a cursor
        // starts live, so its reconnects must not ask for the past.
        const from = Number(f.data?.from);
        if (Number.isFinite(from) && from > this.offset) this.offset = from;
        return 'connected';
      }
      case 'reset': {
        this.epoch = f.data?.epoch ?? f.epoch ?? this.epoch;
        // The events that follow start after resume_from (or the frame's
        // own offset on SSE): everything numbered before it is another
        // history now, so the duplicate check restarts there.
        const from = Number(f.data?.resume_from ?? f.offset ?? 0);
        this.offset = Number.isFinite(from) ? from : 0;
        return 'reset';
      }
    }
    if (!(f.offset > 0)) return 'other';
    if (f.epoch && this.epoch && f.epoch !== this.epoch) {
      // Never seen without a reset first; take the stream's word for it.
      this.epoch = f.epoch;
      this.offset = f.offset;
      return 'event';
    }
    if (f.offset <= this.offset) return 'duplicate';
    this.offset = f.offset;
    if (f.epoch) this.epoch = f.epoch;
    return 'event';
  }

  /** query is the resume part of the next connection's URL. */
  query(): string {
    const q = new URLSearchParams();
    q.set('from', String(this.offset));
    if (this.epoch) q.set('epoch', this.epoch);
    return q.toString();
  }
}

/** The life of a follower, as the page shows it. */
export type LinkState = 'connecting' | 'live' | 'reconnecting' | 'done';

/** The WebSocket the follower needs; the browser's, or a fake in tests. */
export interface SocketLike {
  onopen: ((ev: unknown) => void) | null;
  onmessage: ((ev: { data: unknown }) => void) | null;
  onclose: ((ev: { code: number; reason?: string }) => void) | null;
  onerror: ((ev: unknown) => void) | null;
  close(code?: number, reason?: string): void;
}

export interface FollowerOptions {
  /** url returns the address to connect to from the cursor's position. */
  url: (c: Cursor) => string;
  /** protocols, e.g. the bearer subprotocol; none when the cookie carries the token. */
  protocols?: string[];
  cursor?: Cursor;
  /** onFrames receives every frame to show, in order, in batches. */
  onFrames: (frames: Array<{ frame: Frame; verdict: Verdict }>) => void;
  onState?: (s: LinkState, detail?: string) => void;
  /** finite: a normal close (1000) means the stream is over (a workflow's end). */
  finite?: boolean;
  socket?: (url: string, protocols?: string[]) => SocketLike;
  /** schedule runs the batch flush; requestAnimationFrame in the page. */
  schedule?: (fn: () => void) => void;
  /** timer for the reconnect backoff. */
  setTimer?: (fn: () => void, ms: number) => unknown;
  clearTimer?: (t: unknown) => void;
  minBackoffMs?: number;
  maxBackoffMs?: number;
}

/**
 * Follower keeps a WebSocket open on a stream, reconnecting from its cursor
 * with backoff after every drop (a gateway restart, 1001; a slow consumer,
 * 4008; a network error, 1006) until the stream ends (1000, when finite) or
 * stop is called. Frames are classified by the cursor as they arrive and
 * handed over in batches, one per scheduled flush, duplicates included (so a
 * test can count them) and marked.
 */
export class Follower {
  readonly cursor: Cursor;
  private opts: FollowerOptions;
  private sock: SocketLike | null = null;
  private pending: Array<{ frame: Frame; verdict: Verdict }> = [];
  private scheduled = false;
  private stopped = false;
  private timer: unknown = null;
  private backoff: number;
  /** connections counts opened sockets: 1 plus the reconnects. */
  connections = 0;

  constructor(opts: FollowerOptions) {
    this.opts = opts;
    this.cursor = opts.cursor ?? new Cursor();
    this.backoff = opts.minBackoffMs ?? 200;
  }

  start(): void {
    this.stopped = false;
    this.open();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer !== null) (this.opts.clearTimer ?? clearTimeout)(this.timer as number);
    this.timer = null;
    const s = this.sock;
    this.sock = null;
    if (s) {
      s.onclose = null;
      s.onmessage = null;
      s.close(1000, 'page left');
    }
  }

  /** send writes a client frame (cancel, approve) on the open socket. */
  send(frame: object): boolean {
    const s = this.sock as unknown as { send?: (d: string) => void; readyState?: number } | null;
    if (!s?.send || s.readyState !== 1) return false;
    s.send(JSON.stringify(frame));
    return true;
  }

  private state(s: LinkState, detail?: string) {
    this.opts.onState?.(s, detail);
  }

  private open() {
    if (this.stopped) return;
    this.connections++;
    this.state(this.connections === 1 ? 'connecting' : 'reconnecting');
    const make = this.opts.socket ?? ((u: string, p?: string[]) => new WebSocket(u, p) as unknown as SocketLike);
    let s: SocketLike;
    try {
      s = make(this.opts.url(this.cursor), this.opts.protocols);
    } catch (e) {
      this.retry(String(e));
      return;
    }
    this.sock = s;
    s.onmessage = (m) => {
      let f: Frame;
      try {
        f = JSON.parse(String(m.data));
      } catch {
        return;
      }
      const verdict = this.cursor.accept(f);
      if (verdict === 'connected') {
        this.backoff = this.opts.minBackoffMs ?? 200;
        this.state('live');
      }
      this.pending.push({ frame: f, verdict });
      this.kick();
    };
    s.onerror = () => {};
    s.onclose = (e) => {
      if (this.sock !== s) return;
      this.sock = null;
      this.flush();
      if (this.opts.finite && e.code === 1000) {
        this.stopped = true;
        this.state('done');
        return;
      }
      if (e.code === 1008 && /unknown|not found|forbidden/i.test(e.reason ?? '')) {
        this.stopped = true;
        this.state('done', e.reason);
        return;
      }
      this.retry(`closed ${e.code}${e.reason ? ': ' + e.reason : ''}`);
    };
  }

  private retry(detail: string) {
    if (this.stopped) return;
    this.state('reconnecting', detail);
    const wait = this.backoff;
    this.backoff = Math.min(this.backoff * 2, this.opts.maxBackoffMs ?? 2000);
    this.timer = (this.opts.setTimer ?? setTimeout)(() => {
      this.timer = null;
      this.open();
    }, wait);
  }

  private kick() {
    if (this.scheduled) return;
    this.scheduled = true;
    (this.opts.schedule ?? ((fn) => queueMicrotask(fn)))(() => this.flush());
  }

  private flush() {
    this.scheduled = false;
    if (this.pending.length === 0) return;
    const batch = this.pending;
    this.pending = [];
    this.opts.onFrames(batch);
  }
}

/**
 * frameScheduler returns a schedule for Follower: a flush runs on an
 * animation frame (or within 50 ms when the tab is hidden and has none), and
 * at most once every minGapMs, so that a burst of events renders a few times
 * a second, each time with all that arrived, instead of on every frame.
 */
export function frameScheduler(minGapMs = 100): (fn: () => void) => void {
  let last = 0;
  return (fn) => {
    let done = false;
    const run = () => {
      if (done) return;
      done = true;
      last = performance.now();
      fn();
    };
    const wait = Math.max(0, last + minGapMs - performance.now());
    const arm = () => {
      requestAnimationFrame(run);
      setTimeout(run, 50);
    };
    if (wait > 0) setTimeout(arm, wait);
    else arm();
  };
}

/** wsURL turns a path into a same-origin WebSocket address. */
export function wsURL(path: string): string {
  return `${location.protocol === 'https:' ? 'wss:' : 'ws:'}//${location.host}${path}`;
}
