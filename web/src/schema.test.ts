import { describe, expect, it } from 'vitest';
import { lineOf, locate, parseJSON, validateRequest } from './schema';

describe('validateRequest', () => {
  it('accepts a query and a valid plan', () => {
    expect(validateRequest({ query: 'hello' })).toEqual([]);
    expect(validateRequest({ plan: { steps: [{ id: 'a', capability: 'echo' }, { id: 'b', capability: 'sleep', depends_on: ['a'], requires_approval: true }] } })).toEqual([]);
  });
  it('points at each bad field, as the gateway does', () => {
    const p = validateRequest({ plan: { steps: [{ id: 'A', capability: 'Echo' }, { id: 'b' }] } });
    const ptrs = p.map((x) => x.pointer);
    expect(ptrs).toContain('/plan/steps/0/capability');
    expect(ptrs).toContain('/plan/steps/1');
    expect(p.find((x) => x.pointer === '/plan/steps/1')!.message).toMatch(/capability/);
  });
  it('names an unknown property', () => {
    const p = validateRequest({ query: 'x', plan: { steps: [{ id: 'a', capability: 'echo', retries: 3 }] } });
    expect(p.some((x) => x.pointer.startsWith('/plan/steps/0') && /retries/.test(x.message))).toBe(true);
  });
  it('needs a query or a plan', () => {
    expect(validateRequest({}).length).toBeGreaterThan(0);
  });
});

describe('locate', () => {
  const text = `{
  "plan": {
    "steps": [
      {"id": "a", "capability": "echo"},
      {"id": "b", "capability": "Bad", "input": {"x": [1, 2]}}
    ]
  }
}`;
  it('finds the value a pointer names', () => {
    const [s, e] = locate(text, '/plan/steps/1/capability');
    expect(text.slice(s, e)).toBe('"capability": "Bad"');
    expect(lineOf(text, s).line).toBe(5);
  });
  it('finds array elements and nested values', () => {
    const [s, e] = locate(text, '/plan/steps/1/input/x/1');
    expect(text.slice(s, e)).toBe('2');
    const [s0, e0] = locate(text, '/plan/steps/0');
    expect(text.slice(s0, e0)).toBe('{"id": "a", "capability": "echo"}');
  });
  it('falls back to the nearest parent', () => {
    const [s, e] = locate(text, '/plan/steps/7');
    expect(text.slice(s, e).startsWith('[')).toBe(true);
  });
  it('reports where JSON breaks', () => {
    const r = parseJSON('{"a": }');
    expect(r.error).toBeDefined();
    expect(r.error!.at).toBeGreaterThan(0);
  });
});
