// Large payloads: a step's output, an artifact's data or a result larger
// than the payload threshold travels as a reference — the JSON value
// {"$agentbus_ref": {bucket, key, size, sha256, content_type}} — and the
// bytes stay in the object store (events/payloadref.go). The page shows
// such a value as its size and type with a download link, never the bytes.

/** refKey is the one member of a reference object (events.RefKey). */
export const refKey = '$agentbus_ref';

/** PayloadRef locates a payload (events.PayloadRef). */
export interface PayloadRef {
  bucket: string;
  key: string;
  size: number;
  sha256: string;
  content_type?: string;
}

/**
 * asRef tells whether v is a payload reference: an object whose only
 * member is $agentbus_ref, naming a bucket and a key (events.ParseRef).
 */
export function asRef(v: unknown): PayloadRef | undefined {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return undefined;
  const keys = Object.keys(v);
  if (keys.length !== 1 || keys[0] !== refKey) return undefined;
  const r = (v as Record<string, unknown>)[refKey] as Partial<PayloadRef> | null;
  if (!r || typeof r !== 'object' || typeof r.bucket !== 'string' || !r.bucket || typeof r.key !== 'string' || !r.key) return undefined;
  if (r.size !== undefined && (typeof r.size !== 'number' || r.size < 0)) return undefined;
  return { bucket: r.bucket, key: r.key, size: r.size ?? 0, sha256: typeof r.sha256 === 'string' ? r.sha256 : '', content_type: r.content_type };
}

/** FoundRef is a reference within a larger value, at its JSON pointer. */
export interface FoundRef {
  pointer: string;
  ref: PayloadRef;
}

const escape = (k: string) => k.replace(/~/g, '~0').replace(/\//g, '~1');

/** findRefs lists the references within v (v itself: pointer ""), at most max of them. */
export function findRefs(v: unknown, max = 20): FoundRef[] {
  const out: FoundRef[] = [];
  const walk = (x: unknown, ptr: string, depth: number) => {
    if (out.length >= max || depth > 32 || x === null || typeof x !== 'object') return;
    const ref = asRef(x);
    if (ref) {
      out.push({ pointer: ptr, ref });
      return;
    }
    if (Array.isArray(x)) x.forEach((e, i) => walk(e, `${ptr}/${i}`, depth + 1));
    else for (const [k, e] of Object.entries(x)) walk(e, `${ptr}/${escape(k)}`, depth + 1);
  };
  walk(v, '', 0);
  return out;
}

/**
 * payloadHref is where the gateway serves a workflow's payload: GET
 * /v1/workflows/{id}/payloads/{key after "<tenant>/<workflow>/"}, with
 * ?download=1 asking the browser to save it. A key of another workflow
 * (a reference copied from elsewhere) has no link here: undefined.
 */
export function payloadHref(workflowId: string, ref: PayloadRef, download = true): string | undefined {
  const parts = ref.key.split('/');
  if (parts.length < 3 || parts[1] !== workflowId || parts.slice(2).some((p) => p === '' || p === '.' || p === '..')) return undefined;
  const rest = parts.slice(2).map(encodeURIComponent).join('/');
  return `/v1/workflows/${encodeURIComponent(workflowId)}/payloads/${rest}${download ? '?download=1' : ''}`;
}

/** fileName is the name a payload is saved under (as the gateway names it). */
export function fileName(ref: PayloadRef): string {
  const rest = ref.key.split('/').slice(2).join('-') || 'payload';
  const ext = /json/.test(ref.content_type ?? 'application/json') ? '.json' : '';
  return rest + ext;
}

/** bytes shows a size in bytes, KiB, MiB or GiB. */
export function bytes(n: number): string {
  if (!Number.isFinite(n) || n < 0) return '—';
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v < 10 ? v.toFixed(1) : Math.round(v)} ${units[i]}`;
}
