import { describe, expect, it } from 'vitest';
import type { Frame } from './follow';
import type { Task } from './api';
import { confirmationOf, noteConfirm, onEvent, stepState, type Confirmation, type Live } from './steps';

const st = (step: string, state: string, message = ''): Frame => ({ offset: 1, type: 'status', step_id: step, data: { state, step_id: step, message } });
const pr = (step: string, percent: number, message = ''): Frame => ({ offset: 1, type: 'progress', step_id: step, data: { step_id: step, percent, message } });

describe('onEvent', () => {
  it('follows a step from dispatch to completion', () => {
    const live = new Map<string, Live>();
    onEvent(live, st('a', 'working', 'dispatched to sleep'));
    expect(live.get('a')!.state).toBe('queued');
    onEvent(live, pr('a', 10, 'sleeping'));
    expect(live.get('a')!.state).toBe('running');
    expect(live.get('a')!.percent).toBe(10);
    onEvent(live, st('a', 'completed'));
    // the orchestrator's "done" progress does not bring it back
    expect(onEvent(live, pr('a', 100, 'step a done (1/1)'))).toBe(false);
    expect(live.get('a')!.state).toBe('completed');
    expect(live.get('a')!.dispatches).toBe(1);
  });
  it('counts retries and approvals', () => {
    const live = new Map<string, Live>();
    onEvent(live, st('a', 'working', 'dispatched to x'));
    onEvent(live, st('a', 'working', 'dispatched to x'));
    expect(live.get('a')!.dispatches).toBe(2);
    onEvent(live, st('a', 'input-required'));
    expect(live.get('a')!.state).toBe('awaiting');
  });
  it('ignores workflow-level events', () => {
    const live = new Map<string, Live>();
    expect(onEvent(live, { offset: 1, type: 'status', data: { state: 'working' } })).toBe(false);
    expect(live.size).toBe(0);
  });
});

describe('stepState', () => {
  it('prefers the events, falls back to the checkpoint', () => {
    expect(stepState(undefined, undefined, false)).toBe('pending');
    expect(stepState(undefined, undefined, true)).toBe('skipped');
    expect(stepState({ capability: 'x', status: 'working', attempt: 1 }, undefined, false)).toBe('queued');
    expect(stepState({ capability: 'x', status: 'submitted', attempt: 0 }, undefined, false)).toBe('pending');
    expect(stepState({ capability: 'x', status: 'input-required', attempt: 1 }, undefined, false)).toBe('awaiting');
    expect(stepState({ capability: 'x', status: 'working', attempt: 1 }, { state: 'running', dispatches: 1 }, false)).toBe('running');
    // a checkpoint that already knows the end wins over a live "running"
    expect(stepState({ capability: 'x', status: 'completed', attempt: 1 }, { state: 'running', dispatches: 1 }, false)).toBe('completed');
  });
});

describe('confirmations', () => {
  const held: Frame = { offset: 5, type: 'status', step_id: 'rm', data: { state: 'input-required', step_id: 'rm', confirm: { capability: 'tool_files_delete', rule: 'acme/client requires_confirmation "tool_files_*"', input: { path: '/tmp/x' } } } } as Frame;
  it('are kept from the status event and forgotten when the step moves on', () => {
    const seen = new Map<string, Confirmation>();
    noteConfirm(seen, held);
    expect(seen.get('rm')).toEqual({ capability: 'tool_files_delete', rule: 'acme/client requires_confirmation "tool_files_*"', input: { path: '/tmp/x' } });
    noteConfirm(seen, { offset: 6, type: 'progress', step_id: 'rm', data: { message: 'x' } } as Frame);
    expect(seen.has('rm')).toBe(true);
    noteConfirm(seen, { offset: 7, type: 'status', step_id: 'rm', data: { state: 'working', message: 'dispatched' } } as Frame);
    expect(seen.has('rm')).toBe(false);
  });
  it('come from the checkpoint when the event was not seen', () => {
    const task = { capability: 'tool_files_delete', status: 'input-required', attempt: 0, confirm: 'r', approval: { state: 'pending', before_dispatch: true } } as Task;
    expect(confirmationOf(undefined, task, { id: 'rm', capability: 'tool_files_delete', input: { path: '/a' } })).toEqual({ capability: 'tool_files_delete', rule: 'r', input: { path: '/a' } });
    expect(confirmationOf(undefined, { ...task, approval: { state: 'approved' } }, undefined)).toBeUndefined();
    expect(confirmationOf(undefined, { ...task, confirm: undefined }, undefined)).toBeUndefined();
    const c = { capability: 'x', rule: 'y' };
    expect(confirmationOf(c, undefined, undefined)).toBe(c);
  });
});
