// The event log: every frame the page was sent, with its offset and type,
// virtualized (only the rows in view are in the DOM: a workflow of
// thousands of events scrolls as smoothly as one of ten) and following the
// tail while the view is at the bottom.
import { useLayoutEffect, useRef, useState } from 'preact/hooks';
import { clock } from '../format';
import type { Frame } from '../follow';

export interface LogRow {
  frame: Frame;
  /** kind: an event, or a reset marker the user must see. */
  kind: 'event' | 'reset';
  /** text caches the row's time and summary, made once when first shown. */
  text?: { time: string; what: string };
}

const rowH = 26;
const overscan = 8;

export function EventLog({ rows, version, height = 360 }: { rows: LogRow[]; version: number; height?: number }) {
  const box = useRef<HTMLDivElement>(null);
  const [top, setTop] = useState(0);
  const [follow, setFollow] = useState(true);

  useLayoutEffect(() => {
    const el = box.current;
    if (el && follow) {
      // The bottom is known without asking the layout (no forced reflow).
      const bottom = Math.max(0, rows.length * rowH - height);
      el.scrollTop = bottom;
      setTop(bottom);
    }
  }, [version, follow]);

  const onScroll = () => {
    const el = box.current!;
    setTop(el.scrollTop);
    setFollow(el.scrollTop + el.clientHeight >= el.scrollHeight - rowH);
  };
  const first = Math.max(0, Math.floor(top / rowH) - overscan);
  const last = Math.min(rows.length, Math.ceil((top + height) / rowH) + overscan);
  const slice = rows.slice(first, last);
  return (
    <div class="log-wrap">
      <div class="log-head" aria-hidden="true">
        <span class="l-off">offset</span><span class="l-time">time</span><span class="l-type">type</span><span class="l-step">step</span><span class="l-msg">what</span>
      </div>
      <div class="log" ref={box} onScroll={onScroll} style={{ height: `${height}px` }} tabIndex={0} role="log" aria-label="Event log" data-testid="eventlog">
        <div style={{ height: `${rows.length * rowH}px`, position: 'relative' }}>
          {slice.map((r, i) => {
            const f = r.frame;
            const idx = first + i;
            r.text ??= { time: clock(f.time), what: summary(f) };
            return (
              <div key={idx} class={`row t-${f.type} ${r.kind}`} style={{ top: `${idx * rowH}px` }} data-offset={f.offset}>
                <span class="l-off mono">{r.kind === 'reset' ? '⟲' : f.offset}</span>
                <span class="l-time mono">{r.text.time}</span>
                <span class="l-type"><span class={`badge b-${f.type}`}>{f.type}</span></span>
                <span class="l-step mono">{f.step_id ?? ''}</span>
                <span class="l-msg" title={r.text.what}>{r.text.what}</span>
              </div>
            );
          })}
        </div>
      </div>
      {!follow && rows.length > 0 && (
        <button class="ghost small tail" onClick={() => setFollow(true)}>↓ Follow the tail</button>
      )}
    </div>
  );
}

/** artifactLine is an artifact (an artifact event's data, or a step's output in its status) on one line. */
function artifactLine(d: any): string {
  return `${d.name ?? d.artifact_id ?? 'artifact'}${d.append ? ' +' : ''}: ${typeof d.data === 'string' ? d.data : JSON.stringify(d.data)}`;
}

/** summary is one line saying what an event is. */
export function summary(f: Frame): string {
  const d = f.data ?? {};
  switch (f.type) {
    case 'status': {
      // A completed step's output comes with its status.
      const a = d.artifact;
      const out = a ? ` → ${artifactLine(a)}` : '';
      return `${d.state ?? ''}${d.message ? ' — ' + d.message : ''}${d.total_steps ? ` (${d.completed_steps ?? 0}/${d.total_steps} steps)` : ''}${out}`;
    }
    case 'progress':
      return `${typeof d.percent === 'number' ? Math.round(d.percent) + '% ' : ''}${d.message ?? ''}`;
    case 'artifact':
      return artifactLine(d);
    case 'complete':
      return d.partial ? 'workflow complete, with partial results: optional steps failed' : 'workflow complete';
    case 'error':
      return d.message ?? d.error ?? JSON.stringify(d);
    case 'cancelled':
      return `canceled${d.reason ? ': ' + d.reason : ''}`;
    case 'custom': {
      // An application's own message: JSON payload as is, bytes as their base64 size.
      const payload = d.payload !== undefined ? JSON.stringify(d.payload)
        : d.payload_base64 ? `(${Math.floor((d.payload_base64.length * 3) / 4) - (d.payload_base64.match(/=+$/)?.[0].length ?? 0)} bytes)` : '';
      const meta = Object.entries(d.metadata ?? {}).sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => `${k}=${v}`).join(' ');
      return [payload, meta].filter(Boolean).join(' ');
    }
    case 'reset':
      return `stream reset (${d.reason ?? 'cursor void'}): events up to ${d.resume_from ?? f.offset} were not seen; state reloaded`;
    default:
      return JSON.stringify(d);
  }
}
