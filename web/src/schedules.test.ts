import { describe, expect, it } from 'vitest';
import { emptyForm, field, runsHref, scheduleRequest, timing, until } from './schedules';

describe('schedules', () => {
  it('make a cron request, leaving out what is empty', () => {
    const r = scheduleRequest({ ...emptyForm, id: ' digest ', cron: '0 8 * * mon-fri', timeZone: 'Europe/Paris', jitter: '30s', catchup: ' 1h ', overlap: 'buffer_one', query: 'summarise' });
    expect(r.problems).toEqual([]);
    expect(r.body).toEqual({ schedule_id: 'digest', cron: '0 8 * * mon-fri', time_zone: 'Europe/Paris', jitter: '30s', catchup_window: '1h', overlap: 'buffer_one', workflow: { query: 'summarise' } });
  });
  it('make an interval request with a plan, never a time zone', () => {
    const r = scheduleRequest({ ...emptyForm, id: 'x', timing: 'every', every: '1h', timeZone: 'UTC', cron: '* * * * *', what: 'plan', plan: '{"steps":[]}', paused: true });
    expect(r.body).toEqual({ schedule_id: 'x', every: '1h', overlap: 'skip', paused: true, workflow: { plan: { steps: [] } } });
  });
  it('say a plan that is not JSON at its pointer', () => {
    const r = scheduleRequest({ ...emptyForm, id: 'x', every: '1m', timing: 'every', what: 'plan', plan: '{' });
    expect(r.body).toBeUndefined();
    expect(r.problems[0].pointer).toBe('/workflow/plan');
  });
  it('place the API\'s problems by pointer', () => {
    expect(field('/cron')).toBe('cron');
    expect(field('/time_zone')).toBe('timeZone');
    expect(field('/catchup_window')).toBe('catchup');
    expect(field('/workflow/plan/steps/0/capability')).toBe('plan');
    expect(field('/workflow/metadata/schedule_id')).toBe('form');
    expect(field(undefined)).toBe('form');
  });
  it('show timing and next fire', () => {
    expect(timing({ cron: '@hourly' })).toBe('@hourly');
    expect(timing({ every: '5m' })).toBe('every 5m');
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(until('2026-01-01T00:00:42Z', now)).toBe('in 42s');
    expect(until('2026-01-01T00:03:00Z', now)).toBe('in 3m');
    expect(until('2026-01-01T02:30:00Z', now)).toBe('in 2h 30m');
    expect(until('2025-12-31T00:00:00Z', now)).toBe('due');
    expect(until(undefined, now)).toBe('—');
    expect(runsHref('a b')).toBe('/?schedule_id=a%20b');
  });
});
