// A Follower in a dedicated worker: the WebSocket, its thousands of
// messages, their parsing and the duplicate check run off the page's main
// thread, which receives one batch at most every 100 ms (see stream.ts).
import { Follower, type Frame, type Verdict } from './follow';
import type { StreamRequest, StreamMessage } from './stream';

const post = (m: StreamMessage) => (self as unknown as Worker).postMessage(m);
let f: Follower | null = null;

self.onmessage = (e: MessageEvent<StreamRequest>) => {
  const m = e.data;
  if (m.type === 'stop') {
    f?.stop();
    f = null;
    return;
  }
  f?.stop();
  let last = 0;
  const follower = new Follower({
    url: (c) => m.origin + m.path + (c.epoch || !m.cursorless ? (m.path.includes('?') ? '&' : '?') + c.query() : ''),
    finite: m.finite,
    // no animation frames in a worker: a timer, at most every minGapMs
    schedule: (fn) => {
      const wait = Math.max(0, last + m.minGapMs - performance.now());
      setTimeout(() => {
        last = performance.now();
        fn();
      }, wait);
    },
    onFrames: (batch: Array<{ frame: Frame; verdict: Verdict }>) => post({ type: 'frames', batch }),
    onState: (s, detail) => post({ type: 'state', state: s, detail, connections: follower.connections }),
  });
  f = follower;
  f.start();
};
