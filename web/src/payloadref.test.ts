import { describe, expect, it } from 'vitest';
import { asRef, bytes, fileName, findRefs, payloadHref } from './payloadref';

const ref = { bucket: 'AGENTBUS_PAYLOADS', key: 'acme/wf-1/make/1/output-3f0c9a1b2d4e5f60', size: 52428800, sha256: 'ab'.repeat(32), content_type: 'application/json' };

describe('payload references', () => {
  it('are an object whose only member is $agentbus_ref', () => {
    expect(asRef({ $agentbus_ref: ref })).toEqual(ref);
    expect(asRef({ $agentbus_ref: ref, other: 1 })).toBeUndefined();
    expect(asRef({ $agentbus_ref: { key: 'k' } })).toBeUndefined();
    expect(asRef({ $agentbus_ref: { bucket: 'b', key: 'k', size: -1 } })).toBeUndefined();
    expect(asRef({ $agentbus_ref: null })).toBeUndefined();
    expect(asRef([{ $agentbus_ref: ref }])).toBeUndefined();
    expect(asRef('{"$agentbus_ref":{}}')).toBeUndefined();
    expect(asRef(null)).toBeUndefined();
    expect(asRef({ ref })).toBeUndefined();
  });
  it('are found within a larger value at their JSON pointers', () => {
    const v = { outputs: { make: { $agentbus_ref: ref }, 'a/b': [1, { $agentbus_ref: ref }] }, answer: 'x' };
    expect(findRefs(v).map((f) => f.pointer)).toEqual(['/outputs/make', '/outputs/a~1b/1']);
    expect(findRefs({ $agentbus_ref: ref })).toEqual([{ pointer: '', ref }]);
    expect(findRefs('text')).toEqual([]);
    expect(findRefs([{ $agentbus_ref: ref }, { $agentbus_ref: ref }], 1)).toHaveLength(1);
  });
  it('link to the gateway with the key after tenant and workflow', () => {
    expect(payloadHref('wf-1', ref)).toBe('/v1/workflows/wf-1/payloads/make/1/output-3f0c9a1b2d4e5f60?download=1');
    expect(payloadHref('wf-1', ref, false)).toBe('/v1/workflows/wf-1/payloads/make/1/output-3f0c9a1b2d4e5f60');
    expect(payloadHref('wf-1', { ...ref, key: 'acme/wf-1/a b/1/output-x' })).toBe('/v1/workflows/wf-1/payloads/a%20b/1/output-x?download=1');
    // a reference of another workflow, or a key that climbs, has no link
    expect(payloadHref('wf-2', ref)).toBeUndefined();
    expect(payloadHref('wf-1', { ...ref, key: 'acme/wf-1/../x' })).toBeUndefined();
    expect(payloadHref('wf-1', { ...ref, key: 'acme/wf-1' })).toBeUndefined();
  });
  it('are saved under the gateway\'s name for them', () => {
    expect(fileName(ref)).toBe('make-1-output-3f0c9a1b2d4e5f60.json');
    expect(fileName({ ...ref, content_type: 'application/octet-stream' })).toBe('make-1-output-3f0c9a1b2d4e5f60');
  });
  it('show their size in binary units', () => {
    expect(bytes(0)).toBe('0 B');
    expect(bytes(1023)).toBe('1023 B');
    expect(bytes(1536)).toBe('1.5 KiB');
    expect(bytes(52428800)).toBe('50 MiB');
    expect(bytes(-1)).toBe('—');
  });
});
