// How the Agents page shows a capability's load (GET /v1/capabilities):
// pure functions of the answer, tested in capabilities.test.ts.
import type { Capability, TenantSteps } from './api';
import { ms } from './format';

/** queuedText is a count of queued steps, split by priority (highest
 * first) when more than one waits: "12 (p5 2 · p3 10)". */
export function queuedText(t: TenantSteps): string {
  const by = Object.entries(t.queued_by_priority ?? {})
    .filter(([, n]) => n > 0)
    .sort(([a], [b]) => Number(b) - Number(a));
  if (by.length < 2) return String(t.queued);
  return `${t.queued} (${by.map(([p, n]) => `p${p} ${n}`).join(' · ')})`;
}

/** slotsText is a capability's idle slots of all: "3 idle of 16"; "0"
 * while its registered agents have no slot on its step consumer, and
 * "no worker" when none is registered. */
export function slotsText(c: Capability): string {
  if (c.slots === 0) return c.instances > 0 ? '0' : 'no worker';
  return `${c.idle} idle of ${c.slots}`;
}

/** waitText is how long the oldest queued step has waited, "—" when none waits. */
export function waitText(t: TenantSteps): string {
  return t.queued > 0 && t.oldest_queued_ms !== undefined ? ms(t.oldest_queued_ms) : '—';
}

/** flowState names why a tenant's steps of a capability wait, if they do:
 * throttled (held back by the tenant's own limit while a worker is idle),
 * waiting (their turn for a busy capability), running (steps in flight,
 * none queued), or idle. */
export function flowState(t: TenantSteps): 'throttled' | 'waiting' | 'running' | 'idle' {
  if (t.throttled) return 'throttled';
  if (t.queued > 0) return 'waiting';
  return t.in_flight > 0 ? 'running' : 'idle';
}

/** flowTitle explains a flowState, for the pill's tooltip. */
export const flowTitle: Record<ReturnType<typeof flowState>, string> = {
  throttled: 'steps wait while a worker is idle: held back by your limit (max in flight or rate)',
  waiting: 'steps wait for their turn: every slot is taken',
  running: 'steps in flight, none waiting',
  idle: 'no step of yours',
};
