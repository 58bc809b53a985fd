import { describe, expect, it } from 'vitest';
import { summary } from './components/eventlog';
import type { Frame } from './follow';

const frame = (type: string, data: any): Frame => ({ offset: 1, type, data });

describe('summary', () => {
  it('shows a custom event\'s JSON payload and metadata in key order', () => {
    expect(summary(frame('custom', { payload: { ticket: 'OPS-12' }, metadata: { source: 'jira', by: 'ops' } })))
      .toBe('{"ticket":"OPS-12"} by=ops source=jira');
  });
  it('shows a custom event\'s bytes as their size', () => {
    expect(summary(frame('custom', { payload_base64: '/wE=' }))).toBe('(2 bytes)');
    expect(summary(frame('custom', { payload_base64: 'eA==' }))).toBe('(1 bytes)');
  });
  it('shows a completed step\'s output, which comes with its status', () => {
    expect(summary(frame('status', { state: 'completed', message: 'completed on w1', completed_steps: 1, total_steps: 2,
      artifact: { artifact_id: 'a.output', name: 'echo output', data: { x: 1 }, last_chunk: true } })))
      .toBe('completed — completed on w1 (1/2 steps) → echo output: {"x":1}');
    expect(summary(frame('status', { state: 'working', message: 'dispatched' }))).toBe('working — dispatched');
  });
});
