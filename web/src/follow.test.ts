import { describe, expect, it } from 'vitest';
import { Cursor, Follower, type Frame, type SocketLike, type Verdict } from './follow';

const ev = (offset: number, epoch = 'e1', type = 'status'): Frame => ({ offset, epoch, type });
const connected = (epoch = 'e1', last = 0): Frame => ({ offset: 0, epoch, type: 'connected', data: { epoch, last_offset: last } });

describe('Cursor', () => {
  it('keeps offset and epoch and drops what it has seen', () => {
    const c = new Cursor();
    const got = [connected(), ev(3), ev(4), ev(4), ev(2), ev(5)].map((f) => c.accept(f));
    expect(got).toEqual(['connected', 'event', 'event', 'duplicate', 'duplicate', 'event']);
    expect(c.offset).toBe(5);
    expect(c.epoch).toBe('e1');
    expect(c.query()).toBe('from=5&epoch=e1');
  });
  it('starts where a live feed starts', () => {
    const c = new Cursor();
    c.accept({ offset: 0, type: 'connected', data: { epoch: 'e1', from: 41, last_offset: 41 } });
    expect(c.query()).toBe('from=41&epoch=e1');
  });
  it('starts at 0 without an epoch', () => {
    expect(new Cursor().query()).toBe('from=0');
  });
  it('takes a reset: the new epoch and the resume point, even backwards', () => {
    const c = new Cursor(90, 'old');
    expect(c.accept(connected('new', 12))).toBe('connected');
    expect(c.accept({ offset: 0, type: 'reset', epoch: 'new', data: { reason: 'epoch', epoch: 'new', resume_from: 10 } })).toBe('reset');
    expect(c.offset).toBe(10);
    expect(c.epoch).toBe('new');
    expect(c.accept(ev(11, 'new'))).toBe('event');
    expect(c.accept(ev(11, 'new'))).toBe('duplicate');
  });
  it('reads an SSE reset by its id when data has no resume point', () => {
    const c = new Cursor(5, 'e1');
    expect(c.accept({ offset: 40, type: 'reset', data: { reason: 'retention' } })).toBe('reset');
    expect(c.offset).toBe(40);
  });
  it('passes unnumbered answers through', () => {
    const c = new Cursor(5, 'e1');
    expect(c.accept({ offset: 0, type: 'control_result', data: {} })).toBe('other');
    expect(c.offset).toBe(5);
  });
});

/** fakeServer plays a gateway: a log of events, and sockets that the test drops at will. */
class FakeSocket implements SocketLike {
  onopen: ((ev: unknown) => void) | null = null;
  onmessage: ((ev: { data: unknown }) => void) | null = null;
  onclose: ((ev: { code: number; reason?: string }) => void) | null = null;
  onerror: ((ev: unknown) => void) | null = null;
  closed = false;
  constructor(public url: string) {}
  close() {
    this.closed = true;
  }
  deliver(f: Frame) {
    this.onmessage?.({ data: JSON.stringify(f) });
  }
  drop(code: number, reason = '') {
    this.onclose?.({ code, reason });
  }
}

function harness(finite = true) {
  const sockets: FakeSocket[] = [];
  const timers: Array<() => void> = [];
  const shown: Array<{ frame: Frame; verdict: Verdict }> = [];
  const states: string[] = [];
  const f = new Follower({
    url: (c) => `/v1/workflows/w/ws?${c.query()}`,
    finite,
    socket: (u) => {
      const s = new FakeSocket(u);
      sockets.push(s);
      return s;
    },
    schedule: (fn) => fn(),
    setTimer: (fn) => timers.push(fn),
    clearTimer: () => {},
    onFrames: (b) => shown.push(...b),
    onState: (s) => states.push(s),
  });
  return { f, sockets, timers, shown, states };
}

describe('Follower', () => {
  it('reconnects from the last offset after a drop and shows no event twice', () => {
    const h = harness();
    h.f.start();
    const log = Array.from({ length: 10 }, (_, i) => ev(i + 1));
    // first connection: events 1..4, then the gateway restarts (1001)
    h.sockets[0].deliver(connected());
    log.slice(0, 4).forEach((e) => h.sockets[0].deliver(e));
    h.sockets[0].drop(1001, 'going away');
    expect(h.states.at(-1)).toBe('reconnecting');
    h.timers.shift()!();
    expect(h.sockets[1].url).toBe('/v1/workflows/w/ws?from=4&epoch=e1');
    // the second connection overlaps (resends 3 and 4), then a network drop
    h.sockets[1].deliver(connected());
    log.slice(2, 7).forEach((e) => h.sockets[1].deliver(e));
    h.sockets[1].drop(1006);
    h.timers.shift()!();
    expect(h.sockets[2].url).toBe('/v1/workflows/w/ws?from=7&epoch=e1');
    h.sockets[2].deliver(connected());
    log.slice(7).forEach((e) => h.sockets[2].deliver(e));
    h.sockets[2].drop(1000);
    const events = h.shown.filter((x) => x.verdict === 'event').map((x) => x.frame.offset);
    expect(events).toEqual(log.map((e) => e.offset));
    expect(h.shown.filter((x) => x.verdict === 'duplicate')).toHaveLength(2);
    expect(h.states.at(-1)).toBe('done');
    expect(h.timers).toHaveLength(0);
  });
  it('shows a reset and continues from its resume point', () => {
    const h = harness();
    h.f.start();
    h.sockets[0].deliver(connected('e1'));
    h.sockets[0].deliver(ev(1));
    h.sockets[0].drop(1006);
    h.timers.shift()!();
    h.sockets[1].deliver(connected('e2'));
    h.sockets[1].deliver({ offset: 0, type: 'reset', epoch: 'e2', data: { reason: 'epoch', epoch: 'e2', resume_from: 0 } });
    h.sockets[1].deliver(ev(1, 'e2'));
    expect(h.shown.map((x) => x.verdict)).toEqual(['connected', 'event', 'connected', 'reset', 'event']);
    expect(h.f.cursor.query()).toBe('from=1&epoch=e2');
  });
  it('keeps an endless feed open across normal closes', () => {
    const h = harness(false);
    h.f.start();
    h.sockets[0].drop(1000);
    expect(h.timers).toHaveLength(1);
  });
  it('stops for good on stop', () => {
    const h = harness();
    h.f.start();
    h.f.stop();
    expect(h.sockets[0].closed).toBe(true);
    expect(h.timers).toHaveLength(0);
  });
});
