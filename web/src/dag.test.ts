import { describe, expect, it } from 'vitest';
import { DagError, defaultLayout, layout, stagesOf, type PlanStep } from './dag';

const s = (id: string, ...deps: string[]): PlanStep => ({ id, capability: 'echo', depends_on: deps });

describe('stagesOf', () => {
  const cases: Array<[string, PlanStep[], string[][]]> = [
    ['one step', [s('a')], [['a']]],
    ['parallel', [s('a'), s('b'), s('c')], [['a', 'b', 'c']]],
    ['chain', [s('c', 'b'), s('b', 'a'), s('a')], [['a'], ['b'], ['c']]],
    ['diamond', [s('a'), s('b', 'a'), s('c', 'a'), s('d', 'b', 'c')], [['a'], ['b', 'c'], ['d']]],
    ['plan order within a stage', [s('z'), s('y'), s('x', 'z'), s('w', 'y')], [['z', 'y'], ['x', 'w']]],
    ['duplicate dependency counted once', [s('a'), s('b', 'a', 'a')], [['a'], ['b']]],
  ];
  for (const [name, steps, want] of cases) it(name, () => expect(stagesOf(steps)).toEqual(want));

  it('rejects a cycle, naming its steps', () => {
    expect(() => stagesOf([s('a'), s('b', 'c'), s('c', 'b')])).toThrowError(/cycle among steps b, c/);
  });
  it('rejects an unknown dependency', () => {
    expect(() => stagesOf([s('a', 'nope')])).toThrowError(DagError);
  });
});

describe('layout', () => {
  const o = defaultLayout;
  it('puts stages in columns and centres them', () => {
    const l = layout([s('a'), s('b', 'a'), s('c', 'a'), s('d', 'b', 'c')]);
    const at = Object.fromEntries(l.nodes.map((n) => [n.id, n]));
    expect(at.a.stage).toBe(0);
    expect(at.b.stage).toBe(1);
    expect(at.c.stage).toBe(1);
    expect(at.d.stage).toBe(2);
    expect(at.b.x).toBe(at.c.x);
    expect(at.c.y - at.b.y).toBe(o.nodeHeight + o.gapY);
    // a and d sit on the middle line of b and c
    expect(at.a.y).toBe((at.b.y + at.c.y) / 2);
    expect(at.d.y).toBe(at.a.y);
    expect(l.width).toBe(2 * o.pad + 3 * o.nodeWidth + 2 * o.gapX);
    expect(l.height).toBe(2 * o.pad + 2 * o.nodeHeight + o.gapY);
  });
  it('draws one edge per dependency, right side to left side', () => {
    const l = layout([s('a'), s('b', 'a')]);
    expect(l.edges).toHaveLength(1);
    const e = l.edges[0];
    expect(e.from).toBe('a');
    expect(e.d.startsWith(`M${o.pad + o.nodeWidth},`)).toBe(true);
    expect(e.d.endsWith(`${o.pad + o.nodeWidth + o.gapX},${o.pad + o.nodeHeight / 2}`)).toBe(true);
  });
  it('runs an edge that skips a stage along its row, bending in the last gap', () => {
    const l = layout([s('a'), s('b', 'a'), s('c', 'a', 'b')]);
    const e = l.edges.find((x) => x.from === 'a' && x.to === 'c')!;
    const xa = o.pad + 2 * (o.nodeWidth + o.gapX) - o.gapX;
    expect(e.d).toContain(`L${xa},`);
  });
  it('uses the stages it is given', () => {
    const l = layout([s('a'), s('b')], [['b'], ['a']]);
    expect(l.nodes.find((n) => n.id === 'a')!.stage).toBe(1);
  });
  it('never overlaps nodes', () => {
    const steps = [s('r')];
    for (let i = 0; i < 12; i++) steps.push(s(`m${i}`, 'r'));
    steps.push(s('z', ...steps.slice(1).map((x) => x.id)));
    const l = layout(steps);
    for (const a of l.nodes)
      for (const b of l.nodes)
        if (a !== b && a.stage === b.stage) expect(Math.abs(a.y - b.y)).toBeGreaterThanOrEqual(o.nodeHeight + o.gapY);
  });
});
