// Validation of a submission against the repository's own JSON Schemas
// (schemas/, imported at build time, so the page and the gateway check the
// same rules), with every problem located in the editor's text by its JSON
// pointer.
import { Validator, type Schema } from '@cfworker/json-schema';
import planSchema from '../../schemas/plan.json';
import requestSchema from '../../schemas/workflow.request.json';

export interface Problem {
  pointer: string;
  message: string;
}

const request = new Validator(requestSchema as unknown as Schema, '2020-12', false);
request.addSchema(planSchema as unknown as Schema);

// Keywords whose failure only says that something below failed: the
// problems below are the ones to show.
const wrappers = new Set(['properties', 'items', 'prefixItems', '$ref', 'allOf', 'additionalProperties', 'unevaluatedProperties']);

/** validateRequest checks a POST /v1/workflows body; [] means valid. */
export function validateRequest(doc: unknown): Problem[] {
  const r = request.validate(doc);
  if (r.valid) return [];
  const all = r.errors.map((e) => ({
    pointer: e.instanceLocation.replace(/^#/, ''),
    keyword: e.keyword,
    message: e.error,
  }));
  // additionalProperties names the property itself: point at it.
  const shown = all.filter((e) => !wrappers.has(e.keyword) || (e.keyword === 'additionalProperties' && /"/.test(e.message)));
  const list = (shown.length > 0 ? shown : all).map((e) => ({ pointer: e.pointer, message: tidy(e.message, e.keyword) }));
  const seen = new Set<string>();
  return list.filter((p) => {
    const k = p.pointer + '\0' + p.message;
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  }).sort((a, b) => a.pointer.localeCompare(b.pointer));
}

function tidy(msg: string, keyword: string): string {
  const m = msg.replace(/^Instance (does not|has)/, (_, v) => (v === 'has' ? 'has' : 'does not'));
  return keyword === 'anyOf' ? 'needs "query" or "plan"' : m;
}

/** parseJSON parses text, or returns a problem placed at the failing character. */
export function parseJSON(text: string): { value?: unknown; error?: { message: string; at: number } } {
  try {
    return { value: JSON.parse(text) };
  } catch (e) {
    const msg = e instanceof Error ? e.message : String(e);
    const m = /position (\d+)/.exec(msg);
    return { error: { message: msg, at: m ? Number(m[1]) : text.length } };
  }
}

/**
 * locate finds the text span of the value a JSON pointer names in a JSON
 * document's text ([start, end) character offsets), or of its nearest
 * existing parent. The text must parse.
 */
export function locate(text: string, pointer: string): [number, number] {
  const want = pointer === '' ? [] : pointer.slice(1).split('/').map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~'));
  let i = 0;
  const ws = () => {
    while (i < text.length && /\s/.test(text[i])) i++;
  };
  const str = () => {
    const s = i;
    i++;
    while (i < text.length && text[i] !== '"') i += text[i] === '\\' ? 2 : 1;
    i++;
    return JSON.parse(text.slice(s, i)) as string;
  };
  // skip passes over one value; find descends along want from depth d.
  const skip = (): void => {
    ws();
    const c = text[i];
    if (c === '"') {
      str();
    } else if (c === '{' || c === '[') {
      i++;
      ws();
      if (text[i] === (c === '{' ? '}' : ']')) {
        i++;
        return;
      }
      for (;;) {
        ws();
        if (c === '{') {
          str();
          ws();
          i++; // :
        }
        skip();
        ws();
        if (text[i++] !== ',') return;
      }
    } else {
      while (i < text.length && !/[\s,\]}]/.test(text[i])) i++;
    }
  };
  const find = (d: number): [number, number] => {
    ws();
    const start = i;
    if (d === want.length) {
      skip();
      return [start, i];
    }
    const c = text[i];
    if (c !== '{' && c !== '[') {
      skip();
      return [start, i];
    }
    i++;
    let idx = 0;
    for (;;) {
      ws();
      if (text[i] === '}' || text[i] === ']') break;
      let key = String(idx++);
      let keyStart = i;
      if (c === '{') {
        keyStart = i;
        key = str();
        ws();
        i++;
      }
      if (key === want[d]) {
        const r = find(d + 1);
        // a property that is itself the problem (additionalProperties): its key too
        return c === '{' && d + 1 === want.length ? [keyStart, r[1]] : r;
      }
      skip();
      ws();
      if (text[i] !== ',') break;
      i++;
    }
    i = start;
    skip();
    return [start, i];
  };
  try {
    return find(0);
  } catch {
    return [0, text.length];
  }
}

/** lineOf is the 1-based line and column of a character offset. */
export function lineOf(text: string, at: number): { line: number; col: number } {
  const before = text.slice(0, at);
  const line = before.split('\n').length;
  return { line, col: at - before.lastIndexOf('\n') };
}
