// The plan drawn by stages: columns of step boxes (buttons, so keyboard
// reachable) over an SVG layer of edges. Sizes come from the layout, so the
// box never changes size while states stream in.
import { useMemo } from 'preact/hooks';
import { defaultLayout, layout, type PlanStep } from '../dag';
import { ms } from '../format';
import { stepLabel, type StepState } from '../steps';

export interface StepView {
  state: StepState;
  worker?: string;
  attempt?: number;
  durationMs?: number;
  message?: string;
  percent?: number;
}

export function DagView(props: { steps: PlanStep[]; stages?: string[][]; views: Record<string, StepView>; selected?: string; onSelect: (id: string) => void }) {
  const l = useMemo(() => {
    try {
      // Long chains get narrower boxes so that more of them fit the card.
      const n = props.stages?.length ?? 0;
      const o = n > 4 ? { ...defaultLayout, nodeWidth: 152, gapX: 32 } : defaultLayout;
      return layout(props.steps, props.stages, o);
    } catch (e) {
      return String(e);
    }
  }, [props.steps, props.stages]);
  if (typeof l === 'string') return <p class="error">{l}</p>;

  return (
    <div class="dag-scroll" tabIndex={-1}>
      <div class="dag" style={{ width: `${l.width}px`, height: `${l.height}px` }} role="group" aria-label="Plan steps by stage">
        <svg class="edges" width={l.width} height={l.height} aria-hidden="true">
          {l.edges.map((e) => {
            const done = props.views[e.from]?.state === 'completed';
            return <path key={e.from + '>' + e.to} d={e.d} class={done ? 'edge done' : 'edge'} />;
          })}
        </svg>
        {l.nodes.map((n) => {
          const step = props.steps.find((s) => s.id === n.id);
          const v = props.views[n.id] ?? { state: 'pending' };
          const sub = v.state === 'running' && v.worker ? `on ${v.worker}` : v.state === 'running' && v.message ? v.message : v.worker ? v.worker : step?.capability;
          return (
            <button key={n.id} class={`node st-${v.state} ${props.selected === n.id ? 'sel' : ''}`} style={{ left: `${n.x}px`, top: `${n.y}px`, width: `${l.nodeWidth}px` }}
              onClick={() => props.onSelect(n.id)} data-step={n.id} data-state={v.state} aria-pressed={props.selected === n.id}
              aria-label={`${n.id}: ${stepLabel[v.state]}`}>
              <span class="n-top">
                <i class="dot" aria-hidden="true" />
                <b class="n-id">{n.id}</b>
                {(v.attempt ?? 1) > 1 && <span class="tag" title="attempts">×{v.attempt}</span>}
                {step?.requires_approval && <span class="tag" title="requires approval">gate</span>}
                <span class="n-dur">{v.durationMs !== undefined ? ms(v.durationMs) : ''}</span>
              </span>
              <span class="n-sub">
                <span class="n-state">{stepLabel[v.state]}</span>
                <span class="n-cap" title={sub}>{sub}</span>
              </span>
              <span class="bar" aria-hidden="true"><span class="fill" style={{ transform: `scaleX(${barWidth(v) / 100})` }} /></span>
            </button>
          );
        })}
      </div>
    </div>
  );
}

function barWidth(v: StepView): number {
  if (v.state === 'completed' || v.state === 'awaiting') return 100;
  if (v.state === 'running') return Math.max(8, Math.min(95, v.percent ?? 30));
  if (v.state === 'queued') return 4;
  return 0;
}
