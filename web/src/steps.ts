// A step's live state, from the workflow's events as they stream in, with
// the checkpoint (GET /v1/workflows/{id}) filling in what events do not say
// and standing in for events a reset skipped.
import type { Task } from './api';
import type { PlanStep } from './dag';
import type { Frame } from './follow';

export type StepState = 'pending' | 'queued' | 'running' | 'awaiting' | 'completed' | 'failed' | 'skipped' | 'canceled' | 'rejected';

export interface Live {
  state: StepState;
  message?: string;
  percent?: number;
  /** dispatches counts the step's dispatches seen: more than one is a retry. */
  dispatches: number;
  at?: string;
}

const fromStatus: Record<string, StepState> = {
  completed: 'completed',
  failed: 'failed',
  'input-required': 'awaiting',
  canceled: 'canceled',
  rejected: 'rejected',
};

/** onEvent updates live from one event; it reports whether a step changed. */
export function onEvent(live: Map<string, Live>, f: Frame): boolean {
  const id = f.step_id ?? f.data?.step_id;
  if (!id) return false;
  const cur = live.get(id) ?? { state: 'pending' as StepState, dispatches: 0 };
  const d = f.data ?? {};
  const next: Live = { ...cur, at: f.time };
  switch (f.type) {
    case 'status': {
      const st: string = d.state;
      if (st === 'working' || st === 'submitted') {
        if (/^dispatched/.test(d.message ?? '')) {
          next.state = 'queued';
          next.dispatches = cur.dispatches + 1;
          next.percent = undefined;
        } else next.state = 'running';
      } else if (fromStatus[st]) next.state = fromStatus[st];
      next.message = d.message;
      break;
    }
    case 'progress':
    case 'artifact':
      // The orchestrator's own "step done (n/N)" progress comes after the
      // step completed: only a step on its way may become running.
      if (cur.state !== 'queued' && cur.state !== 'running') return false;
      next.state = 'running';
      if (f.type === 'progress') {
        next.message = d.message;
        if (typeof d.percent === 'number') next.percent = d.percent;
      }
      break;
    default:
      return false;
  }
  live.set(id, next);
  return true;
}

/** stepState is what the DAG shows for a step. */
export function stepState(task: Task | undefined, live: Live | undefined, workflowDone: boolean): StepState {
  if (live && live.state !== 'pending') {
    // the checkpoint may know the end before the event arrives (reset)
    if (task && (live.state === 'queued' || live.state === 'running')) {
      const t = fromTask(task);
      if (t !== 'queued' && t !== 'running') return t;
    }
    return live.state;
  }
  if (task) return fromTask(task);
  return workflowDone ? 'skipped' : 'pending';
}

function fromTask(t: Task): StepState {
  switch (t.status) {
    case 'submitted':
    case 'working':
      // attempt 0: waiting on its dependencies, never dispatched
      return !t.attempt ? 'pending' : t.worker ? 'running' : 'queued';
    case 'input-required':
      return 'awaiting';
    default:
      return fromStatus[t.status] ?? 'pending';
  }
}

export const stepLabel: Record<StepState, string> = {
  pending: 'pending',
  queued: 'queued',
  running: 'running',
  awaiting: 'awaiting approval',
  completed: 'completed',
  failed: 'failed',
  skipped: 'skipped',
  canceled: 'canceled',
  rejected: 'rejected',
};

/** Confirmation is what a step held by the tool permissions waits on: a status event's confirm. */
export interface Confirmation {
  capability: string;
  rule: string;
  input?: unknown;
}

/**
 * noteConfirm keeps the confirm of a step's status event (the step is held
 * for a confirmation before it runs), and forgets it once the step moves on.
 */
export function noteConfirm(seen: Map<string, Confirmation>, f: Frame): void {
  const id = f.step_id ?? f.data?.step_id;
  if (f.type !== 'status' || !id) return;
  const c = f.data?.confirm;
  if (c && typeof c === 'object' && typeof c.rule === 'string') seen.set(id, { capability: String(c.capability ?? ''), rule: c.rule, input: c.input });
  else if (f.data?.state !== 'input-required') seen.delete(id);
}

/**
 * confirmationOf is the confirmation a step awaits, if it awaits one: the
 * event's when seen, else the checkpoint's rule with the plan's input (a
 * page opened later, or after a reset, has not seen the event).
 */
export function confirmationOf(seen: Confirmation | undefined, task: Task | undefined, step: PlanStep | undefined): Confirmation | undefined {
  if (seen) return seen;
  if (!task?.confirm || task.approval?.state !== 'pending') return undefined;
  return { capability: task.capability || step?.capability || '', rule: task.confirm, input: step?.input };
}
