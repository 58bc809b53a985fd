// What the browser tests and the benchmark read from the page: the event
// log as shown (offsets, types, duplicates dropped, reconnects) and when
// each batch of events was painted. Read-only; nothing of the page depends
// on it.
import type { LogRow } from '../components/eventlog';

interface Probe {
  workflow: string;
  log: () => { offsets: number[]; types: string[]; resets: number; duplicates: number; connections: number; link: string };
  /** shown holds [last offset of a batch, Date.now() at its first paint]. */
  shown: Array<[number, number]>;
}

declare global {
  interface Window {
    __agentbus?: Probe;
  }
}

export function exposeLog(workflow: string, read: () => { rows: LogRow[]; duplicates: number; connections: number; link: string }) {
  const shown = window.__agentbus?.workflow === workflow ? window.__agentbus.shown : [];
  window.__agentbus = {
    workflow,
    shown,
    log: () => {
      const r = read();
      const ev = r.rows.filter((x) => x.kind === 'event');
      return {
        offsets: ev.map((x) => x.frame.offset),
        types: ev.map((x) => x.frame.type),
        resets: r.rows.length - ev.length,
        duplicates: r.duplicates,
        connections: r.connections,
        link: r.link,
      };
    },
  };
}

export function markShown(rows: LogRow[]) {
  const last = rows.at(-1)?.frame.offset;
  if (!last || !window.__agentbus) return;
  const probe = window.__agentbus;
  requestAnimationFrame(() => probe.shown.push([last, Date.now()]));
}
