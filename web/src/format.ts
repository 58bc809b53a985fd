// Small formatting helpers shared by the pages.
export function ago(iso?: string, now = Date.now()): string {
  if (!iso) return '—';
  const t = Date.parse(iso);
  if (!Number.isFinite(t)) return '—';
  const s = Math.max(0, Math.round((now - t) / 1000));
  if (s < 60) return `${s}s ago`;
  if (s < 3600) return `${Math.floor(s / 60)}m ago`;
  if (s < 86400) return `${Math.floor(s / 3600)}h ago`;
  return new Date(t).toLocaleDateString();
}

export function ms(n?: number): string {
  if (n === undefined || !Number.isFinite(n)) return '—';
  if (n < 1) return `${n.toFixed(2)} ms`;
  if (n < 1000) return `${Math.round(n)} ms`;
  if (n < 60000) return `${(n / 1000).toFixed(1)} s`;
  const m = Math.floor(n / 60000);
  return `${m}m ${Math.round((n % 60000) / 1000)}s`;
}

export function between(a?: string, b?: string | number): number | undefined {
  if (!a) return undefined;
  const t0 = Date.parse(a);
  const t1 = typeof b === 'number' ? b : b ? Date.parse(b) : NaN;
  return Number.isFinite(t0) && Number.isFinite(t1) ? t1 - t0 : undefined;
}

// One formatter for every clock(): toLocaleTimeString makes a new one per
// call, which costs more than the rest of a log row's rendering.
let hms: Intl.DateTimeFormat | undefined;

export function clock(iso?: string): string {
  if (!iso) return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  hms ??= new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23' });
  return hms.format(d) + '.' + String(d.getMilliseconds()).padStart(3, '0');
}

export const stateLabel: Record<string, string> = {
  submitted: 'submitted',
  working: 'running',
  'input-required': 'awaiting approval',
  completed: 'completed',
  failed: 'failed',
  canceled: 'canceled',
  rejected: 'rejected',
};
