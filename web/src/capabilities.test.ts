import { describe, expect, it } from 'vitest';
import type { Capability, TenantSteps } from './api';
import { flowState, queuedText, slotsText, waitText } from './capabilities';

const steps = (o: Partial<TenantSteps>): TenantSteps => ({ queued: 0, in_flight: 0, throttled: false, ...o });
const cap = (o: Partial<Capability>): Capability => ({ capability: 'sleep', instances: 1, healthy: 1, slots: 8, idle: 8, ...steps({}), ...o });

describe('queuedText', () => {
  const cases: Array<[string, TenantSteps, string]> = [
    ['none', steps({}), '0'],
    ['one priority', steps({ queued: 4, queued_by_priority: { '3': 4 } }), '4'],
    ['several, highest first', steps({ queued: 12, queued_by_priority: { '3': 10, '5': 2 } }), '12 (p5 2 · p3 10)'],
    ['a zero left out', steps({ queued: 3, queued_by_priority: { '1': 3, '4': 0 } }), '3'],
    ['no breakdown', steps({ queued: 7 }), '7'],
  ];
  for (const [name, t, want] of cases) it(name, () => expect(queuedText(t)).toBe(want));
});

describe('slotsText', () => {
  it('idle of all', () => expect(slotsText(cap({ slots: 16, idle: 3 }))).toBe('3 idle of 16'));
  it('registered but not bound', () => expect(slotsText(cap({ slots: 0, idle: 0 }))).toBe('0'));
  it('no worker at all', () => expect(slotsText(cap({ instances: 0, healthy: 0, slots: 0, idle: 0 }))).toBe('no worker'));
});

describe('waitText', () => {
  it('the oldest queued step', () => expect(waitText(steps({ queued: 2, oldest_queued_ms: 2410 }))).toBe('2.4 s'));
  it('none queued', () => expect(waitText(steps({ oldest_queued_ms: 5 }))).toBe('—'));
  it('queued, age unknown', () => expect(waitText(steps({ queued: 1 }))).toBe('—'));
});

describe('flowState', () => {
  const cases: Array<[TenantSteps, string]> = [
    [steps({ queued: 3, throttled: true, in_flight: 2 }), 'throttled'],
    [steps({ queued: 3, in_flight: 26 }), 'waiting'],
    [steps({ in_flight: 1 }), 'running'],
    [steps({}), 'idle'],
  ];
  for (const [t, want] of cases) it(want, () => expect(flowState(t)).toBe(want));
});
