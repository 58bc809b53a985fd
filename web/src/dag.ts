// The layout of a plan's DAG by stages: stage k holds the steps whose
// dependencies all lie in earlier stages (Kahn's algorithm, as the
// orchestrator groups them), drawn as columns left to right; edges run from
// a dependency's right side to its dependant's left side.

export interface PlanStep {
  id: string;
  capability: string;
  depends_on?: string[];
  optional?: boolean;
  requires_approval?: boolean;
  fallback?: string;
  input?: unknown;
  timeout_ms?: number;
}

/** DagError names a plan that cannot be drawn: a cycle or an unknown dependency. */
export class DagError extends Error {}

/**
 * stagesOf groups steps into Kahn stages, each in plan order. It throws a
 * DagError on an unknown dependency or a cycle (naming the steps left).
 */
export function stagesOf(steps: PlanStep[]): string[][] {
  const ids = new Set(steps.map((s) => s.id));
  const indeg = new Map<string, number>();
  const dependants = new Map<string, string[]>();
  for (const s of steps) {
    indeg.set(s.id, 0);
    dependants.set(s.id, []);
  }
  for (const s of steps) {
    for (const d of new Set(s.depends_on ?? [])) {
      if (!ids.has(d)) throw new DagError(`step ${s.id} depends on unknown step ${d}`);
      indeg.set(s.id, (indeg.get(s.id) ?? 0) + 1);
      dependants.get(d)!.push(s.id);
    }
  }
  const order = new Map(steps.map((s, i) => [s.id, i]));
  const out: string[][] = [];
  let ready = steps.filter((s) => indeg.get(s.id) === 0).map((s) => s.id);
  let placed = 0;
  while (ready.length > 0) {
    out.push(ready);
    placed += ready.length;
    const next: string[] = [];
    for (const id of ready) {
      for (const d of dependants.get(id)!) {
        const n = indeg.get(d)! - 1;
        indeg.set(d, n);
        if (n === 0) next.push(d);
      }
    }
    next.sort((a, b) => order.get(a)! - order.get(b)!);
    ready = next;
  }
  if (placed !== steps.length) {
    const left = steps.filter((s) => indeg.get(s.id)! > 0).map((s) => s.id);
    throw new DagError(`cycle among steps ${left.join(', ')}`);
  }
  return out;
}

export interface Box {
  id: string;
  stage: number;
  row: number;
  x: number;
  y: number;
}

export interface Edge {
  from: string;
  to: string;
  /** d is an SVG path (a cubic curve) from the source's right to the target's left. */
  d: string;
}

export interface Layout {
  /** nodeWidth is the width every box has. */
  nodeWidth: number;
  nodes: Box[];
  edges: Edge[];
  width: number;
  height: number;
}

export interface LayoutOptions {
  nodeWidth: number;
  nodeHeight: number;
  gapX: number;
  gapY: number;
  pad: number;
}

export const defaultLayout: LayoutOptions = { nodeWidth: 200, nodeHeight: 64, gapX: 56, gapY: 16, pad: 8 };

/**
 * layout places each step at (stage, row): stages given by the workflow's
 * checkpoint are used as they are (the orchestrator's own grouping), else
 * computed. Each column is centred vertically on the tallest one, so that a
 * chain stays a straight line and a diamond looks like one.
 */
export function layout(steps: PlanStep[], stages?: string[][], o: LayoutOptions = defaultLayout): Layout {
  const st = stages && stages.length > 0 ? stages : stagesOf(steps);
  const tallest = Math.max(1, ...st.map((s) => s.length));
  const height = o.pad * 2 + tallest * o.nodeHeight + (tallest - 1) * o.gapY;
  const width = o.pad * 2 + st.length * o.nodeWidth + Math.max(0, st.length - 1) * o.gapX;
  const at = new Map<string, Box>();
  const nodes: Box[] = [];
  st.forEach((col, stage) => {
    const colH = col.length * o.nodeHeight + (col.length - 1) * o.gapY;
    const top = o.pad + (height - 2 * o.pad - colH) / 2;
    col.forEach((id, row) => {
      const b = { id, stage, row, x: o.pad + stage * (o.nodeWidth + o.gapX), y: top + row * (o.nodeHeight + o.gapY) };
      at.set(id, b);
      nodes.push(b);
    });
  });
  const edges: Edge[] = [];
  for (const s of steps) {
    const to = at.get(s.id);
    if (!to) continue;
    for (const dep of s.depends_on ?? []) {
      const from = at.get(dep);
      if (!from) continue;
      const x1 = from.x + o.nodeWidth, y1 = from.y + o.nodeHeight / 2;
      const x2 = to.x, y2 = to.y + o.nodeHeight / 2;
      // An edge that skips stages runs straight along its source's row
      // through the gaps, and bends only in the last gap: a curve across
      // the skipped columns would pass behind their boxes.
      const xa = x2 - o.gapX;
      const mx = (xa + x2) / 2;
      const run = xa > x1 ? `L${xa},${y1} ` : '';
      edges.push({ from: dep, to: s.id, d: `M${x1},${y1} ${run}C${mx},${y1} ${mx},${y2} ${x2},${y2}` });
    }
  }
  return { nodeWidth: o.nodeWidth, nodes, edges, width, height };
}
