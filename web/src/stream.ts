// stream follows a gateway stream (a workflow's events or the tenant feed)
// with the resume logic of follow.ts, in a worker when the browser has
// them (the main thread then only renders batches), else on the page.
import { Follower, frameScheduler, wsURL, type Frame, type LinkState, type Verdict } from './follow';

export interface StreamOptions {
  /** path of the WebSocket, e.g. /v1/workflows/x/ws. */
  path: string;
  /** cursorless: the first connection sends no cursor (the tenant feed starts live). */
  cursorless?: boolean;
  /** finite: a normal close ends the stream (a workflow's end). */
  finite?: boolean;
  onFrames: (batch: Array<{ frame: Frame; verdict: Verdict }>) => void;
  onState: (s: LinkState, detail: string | undefined, connections: number) => void;
}

/** StreamRequest is what the page asks of the worker. */
export type StreamRequest =
  | { type: 'start'; origin: string; path: string; cursorless: boolean; finite: boolean; minGapMs: number }
  | { type: 'stop' };

/** StreamMessage is what the worker tells the page. */
export type StreamMessage =
  | { type: 'frames'; batch: Array<{ frame: Frame; verdict: Verdict }> }
  | { type: 'state'; state: LinkState; detail?: string; connections: number };

const minGapMs = 100;

/** stream starts following and returns its stop. */
export function stream(o: StreamOptions): () => void {
  let w: Worker | undefined;
  try {
    w = new Worker(new URL('./follow.worker.ts', import.meta.url), { type: 'module' });
  } catch {
    w = undefined;
  }
  if (w) {
    const worker = w;
    worker.onmessage = (e: MessageEvent<StreamMessage>) => {
      const m = e.data;
      if (m.type === 'frames') o.onFrames(m.batch);
      else o.onState(m.state, m.detail, m.connections);
    };
    const origin = wsURL('');
    worker.postMessage({ type: 'start', origin, path: o.path, cursorless: !!o.cursorless, finite: !!o.finite, minGapMs } satisfies StreamRequest);
    return () => {
      worker.postMessage({ type: 'stop' } satisfies StreamRequest);
      worker.terminate();
    };
  }
  const f: Follower = new Follower({
    url: (c) => wsURL(o.path + (c.epoch || !o.cursorless ? '?' + c.query() : '')),
    finite: o.finite,
    schedule: frameScheduler(minGapMs),
    onFrames: o.onFrames,
    onState: (s, detail) => o.onState(s, detail, f.connections),
  });
  f.start();
  return () => f.stop();
}
