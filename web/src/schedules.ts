// The Schedules page's pure parts: the API's shapes (GET /v1/schedules),
// the request its form makes (POST /v1/schedules) and how a schedule's
// timing and the API's problems are shown.
import type { Problem } from './api';

export type Overlap = 'skip' | 'buffer_one' | 'cancel_previous' | 'allow_all';

export const overlaps: Array<[Overlap, string]> = [
  ['skip', 'skip (the slot is skipped)'],
  ['buffer_one', 'buffer one (the run waits for the previous)'],
  ['cancel_previous', 'cancel the previous run'],
  ['allow_all', 'allow all (runs overlap)'],
];

/** Schedule is a schedule as GET /v1/schedules lists it (gateway.ScheduleResponse). */
export interface Schedule {
  schedule_id: string;
  cron?: string;
  every?: string;
  time_zone?: string;
  jitter?: string;
  catchup_window?: string;
  overlap: Overlap;
  paused: boolean;
  note?: string;
  workflow: { query?: string; plan?: unknown; metadata?: Record<string, string> };
  user?: string;
  created_at?: string;
  updated_at?: string;
  state: {
    fires: number;
    started: number;
    skipped: number;
    canceled: number;
    last_fire_at?: string;
    last_slot?: string;
    last_scheduled?: string;
    last_workflow_id?: string;
    last_started_at?: string;
    last_skip?: string;
    buffered?: string;
    recent?: string[];
  };
  next_fire_at?: string;
}

/** Form is what the create form holds, as typed. */
export interface Form {
  id: string;
  timing: 'cron' | 'every';
  cron: string;
  every: string;
  timeZone: string;
  jitter: string;
  catchup: string;
  overlap: Overlap;
  paused: boolean;
  what: 'query' | 'plan';
  query: string;
  plan: string;
}

export const emptyForm: Form = {
  id: '', timing: 'cron', cron: '', every: '', timeZone: '', jitter: '', catchup: '', overlap: 'skip', paused: false,
  what: 'query', query: '', plan: '{\n  "steps": [\n    {"id": "hello", "capability": "echo", "input": {"text": "hello"}}\n  ]\n}',
};

/**
 * scheduleRequest makes the POST /v1/schedules body of a form, leaving out
 * what is empty (the gateway's defaults apply), or the problems the page
 * can tell without asking (the plan is not JSON), at their pointers.
 */
export function scheduleRequest(f: Form): { body?: Record<string, unknown>; problems: Problem[] } {
  const body: Record<string, unknown> = { schedule_id: f.id.trim() };
  if (f.timing === 'cron') {
    if (f.cron.trim()) body.cron = f.cron.trim();
    if (f.timeZone.trim()) body.time_zone = f.timeZone.trim();
  } else if (f.every.trim()) body.every = f.every.trim();
  if (f.jitter.trim()) body.jitter = f.jitter.trim();
  if (f.catchup.trim()) body.catchup_window = f.catchup.trim();
  body.overlap = f.overlap;
  if (f.paused) body.paused = true;
  if (f.what === 'query') {
    body.workflow = { query: f.query };
  } else {
    try {
      body.workflow = { plan: JSON.parse(f.plan) };
    } catch (e) {
      return { problems: [{ pointer: '/workflow/plan', message: `not JSON: ${(e as Error).message}` }] };
    }
  }
  return { body, problems: [] };
}

/** field names the form field a problem's JSON pointer is about. */
export function field(pointer?: string): keyof Form | 'form' {
  const p = pointer ?? '';
  if (p === '/schedule_id') return 'id';
  if (p === '/cron') return 'cron';
  if (p === '/every') return 'every';
  if (p === '/time_zone') return 'timeZone';
  if (p === '/jitter') return 'jitter';
  if (p === '/catchup_window') return 'catchup';
  if (p === '/overlap') return 'overlap';
  if (p === '/workflow/query') return 'query';
  if (p.startsWith('/workflow/plan')) return 'plan';
  return 'form';
}

/** timing says when a schedule fires: its cron expression or its interval. */
export function timing(s: Pick<Schedule, 'cron' | 'every'>): string {
  if (s.cron) return s.cron;
  if (s.every) return `every ${s.every}`;
  return '—';
}

/** runsHref lists a schedule's runs on the Workflows page. */
export const runsHref = (id: string) => `/?schedule_id=${encodeURIComponent(id)}`;

/** until says how long until an instant: "in 42s", "in 3m", "in 2h", or the date. */
export function until(iso?: string, now = Date.now()): string {
  if (!iso) return '—';
  const t = Date.parse(iso);
  if (!Number.isFinite(t)) return '—';
  const s = Math.round((t - now) / 1000);
  if (s <= 0) return 'due';
  if (s < 60) return `in ${s}s`;
  if (s < 3600) return `in ${Math.floor(s / 60)}m`;
  if (s < 86400) return `in ${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
  return new Date(t).toLocaleString();
}
