import { describe, expect, it } from 'vitest';
import { childOf, parentOf, wfHref } from './components/family';
import type { WorkflowState } from './api';

const wf = (metadata?: Record<string, string>): WorkflowState => ({ workflow_id: 'c', tenant_id: 'default', status: 'working', metadata });

describe('family', () => {
  it('finds the parent a child workflow names in its metadata', () => {
    expect(parentOf(wf({ parent_workflow: 'p-1', parent_step: 'sub', depth: '1' }))).toEqual({ workflow: 'p-1', step: 'sub' });
    expect(parentOf(wf({ other: 'x' }))).toBeUndefined();
    expect(parentOf(wf())).toBeUndefined();
    expect(parentOf(null)).toBeUndefined();
  });
  it('finds the child a workflow step\'s output names', () => {
    expect(childOf({ child_workflow_id: 'sw-1', result: 1 })).toBe('sw-1');
    expect(childOf({ result: 1 })).toBeUndefined();
    expect(childOf({ child_workflow_id: 3 })).toBeUndefined();
    expect(childOf(null)).toBeUndefined();
    expect(childOf('text')).toBeUndefined();
  });
  it('links a workflow id safely', () => {
    expect(wfHref('a/b')).toBe('/workflows/a%2Fb');
  });
});
