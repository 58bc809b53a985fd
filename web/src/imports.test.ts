// The import graph of web/src has no cycle: a module never reaches itself
// through its imports (type-only ones included, since they tie the files
// together all the same). app.tsx imports the pages, so whatever the pages
// share with the shell lives in a module of its own (session_context.ts).
import { describe, expect, it } from 'vitest';

// Every source under src but the tests (which nothing imports), as text,
// keyed './app.tsx', './pages/login.tsx', …
const sources = import.meta.glob<string>(['./**/*.{ts,tsx}', '!./**/*.test.{ts,tsx}'], { query: '?raw', import: 'default', eager: true });

// A static import or re-export that begins a line: import … from '…',
// import '…', export … from '…' (specifiers may span lines).
const staticImport = /^[ \t]*(?:import|export)\s+(?:[\w$*\s{},]*?\s*from\s*)?['"]([^'"\n]+)['"]/gm;
// Any line that begins an import statement: each must be one staticImport
// reads, so that a form it does not know fails the test, not the check.
const importLine = /^[ \t]*import(?=[\s{*'"])/gm;
// import('…') anywhere, in code or in a type.
const dynamicImport = /\bimport\(\s*['"]([^'"\n]+)['"]\s*\)/g;

/** parseImports returns the module specifiers a source imports, in order. */
function parseImports(file: string, src: string): string[] {
  const out: string[] = [];
  const parsed = new Set<number>();
  for (const m of src.matchAll(staticImport)) {
    out.push(m[1]);
    parsed.add(m.index);
  }
  for (const m of src.matchAll(importLine)) {
    if (!parsed.has(m.index)) {
      const line = src.slice(0, m.index).split('\n').length;
      throw new Error(`${file}:${line}: an import this test cannot read: ${src.slice(m.index).split('\n')[0]}`);
    }
  }
  for (const m of src.matchAll(dynamicImport)) out.push(m[1]);
  return out;
}

/** resolve maps a relative specifier to a key of files, or null for a
 * package or a non-TypeScript file (CSS, JSON); it throws on a relative
 * TypeScript import that names no file. */
function resolve(from: string, spec: string, files: Set<string>): string | null {
  if (!spec.startsWith('.')) return null;
  const parts = from.split('/').slice(0, -1);
  for (const p of spec.split('/')) {
    if (p === '..') parts.pop();
    else if (p !== '.') parts.push(p);
  }
  const base = parts.join('/');
  for (const c of [base, `${base}.ts`, `${base}.tsx`, `${base}/index.ts`, `${base}/index.tsx`]) {
    if (files.has(c)) return c;
  }
  if (/\.(css|json|svg|png)(\?.*)?$/.test(spec)) return null;
  throw new Error(`${from}: import '${spec}' names no file under src`);
}

/** graphOf returns each file's imports of other files under src. */
function graphOf(srcs: Record<string, string>): Map<string, string[]> {
  const files = new Set(Object.keys(srcs));
  const g = new Map<string, string[]>();
  for (const f of [...files].sort()) {
    const to = parseImports(f, srcs[f])
      .map((s) => resolve(f, s, files))
      .filter((t): t is string => t !== null);
    g.set(f, [...new Set(to)]);
  }
  return g;
}

/** findCycles returns every cycle a depth-first search meets, each as the
 * path a → b → … → a, once per cycle whatever node it starts from. */
function findCycles(g: Map<string, string[]>): string[] {
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const seen = new Set<string>();
  const out: string[] = [];
  const visit = (n: string) => {
    state.set(n, 'open');
    stack.push(n);
    for (const m of g.get(n) ?? []) {
      const s = state.get(m);
      if (s === 'open') {
        const cyc = stack.slice(stack.indexOf(m));
        // The same cycle met from another node is the same rotation.
        const min = cyc.indexOf([...cyc].sort()[0]);
        const key = [...cyc.slice(min), ...cyc.slice(0, min)].join('\n');
        if (!seen.has(key)) {
          seen.add(key);
          out.push([...cyc, m].join(' → '));
        }
      } else if (s === undefined) visit(m);
    }
    stack.pop();
    state.set(n, 'done');
  };
  for (const n of [...g.keys()].sort()) if (!state.has(n)) visit(n);
  return out.sort();
}

describe('parseImports', () => {
  it('reads every form of import', () => {
    const src = [
      "import { a, type B } from './a';",
      "import type { C } from \"./c\";",
      'import {',
      '  d,',
      '  e as f,',
      "} from '../d';",
      "import g, * as h from './g';",
      "import './styles.css';",
      "export * from './reexport';",
      "export { x as y } from './named';",
      "export const z = 'not an import';",
      "// import { commented } from './out';",
      "type T = import('./dyn').T;",
    ].join('\n');
    expect(parseImports('x.ts', src)).toEqual(['./a', './c', '../d', './g', './styles.css', './reexport', './named', './dyn']);
  });

  it('refuses an import it cannot read', () => {
    expect(() => parseImports('x.ts', "import {\n  a, // why\n} from './a';")).toThrow(/x\.ts:1/);
  });
});

describe('findCycles', () => {
  const g = (edges: Record<string, string[]>) => new Map(Object.entries(edges));

  it('finds none in a DAG', () => {
    expect(findCycles(g({ a: ['b', 'c'], b: ['c'], c: [] }))).toEqual([]);
  });

  it('finds each cycle once', () => {
    expect(findCycles(g({ a: ['b'], b: ['c', 'a'], c: ['b'], d: ['d'] }))).toEqual(['a → b → a', 'b → c → b', 'd → d']);
  });
});

describe('web/src', () => {
  const graph = graphOf(sources);

  it('is read whole', () => {
    // A check that read nothing would pass on any tree.
    expect(graph.get('./app.tsx')).toContain('./pages/workflow.tsx');
    expect(graph.get('./pages/workflow.tsx')).toContain('./session_context.ts');
    expect(graph.get('./api.ts')).toContain('./dag.ts');
  });

  it('has no import cycle', () => {
    expect(findCycles(graph)).toEqual([]);
  });
});
