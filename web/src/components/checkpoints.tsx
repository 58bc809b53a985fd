// The checkpoint timeline: every kept revision, newest first, each with
// "fork from here" (a new workflow from that revision, completed steps
// reused).
import type { Revision } from '../api';
import { clock } from '../format';
import { StatusPill } from './status';

export function Checkpoints(props: { revisions: Revision[] | null; mayFork: boolean; onFork: (rev: number) => void; busy?: number; error?: string }) {
  if (!props.revisions) return <p class="muted">Loading checkpoints…</p>;
  if (props.revisions.length === 0) return <p class="muted">No checkpoint kept.</p>;
  return (
    <ol class="timeline" data-testid="checkpoints">
      {[...props.revisions].reverse().map((r) => {
        const cp = r.checkpoint ?? ({} as Revision['checkpoint']);
        const tasks = Object.values(cp.tasks ?? {});
        const done = tasks.filter((t) => t.status === 'completed').length;
        return (
          <li key={r.revision} class={`tl-${r.checkpoint_status}`} data-revision={r.revision}>
            <i class="tl-dot" aria-hidden="true" />
            <div class="tl-body">
              <div class="tl-row">
                <b class="mono tl-rev">rev {r.revision}</b>
                <StatusPill state={cp.status ?? 'submitted'} />
                <span class="spacer" />
                <span class="muted small mono">{clock(cp.updated_at)}</span>
              </div>
              <div class="tl-row">
                <span class="muted small tl-what" title={`phase ${cp.phase} · ${r.checkpoint_status}`}>
                  {done}/{cp.plan?.steps?.length ?? tasks.length} done · {(cp.phase ?? '').replace(/_/g, ' ')}{r.checkpoint_status === 'superseded' || r.checkpoint_status === cp.status ? '' : ` · ${r.checkpoint_status}`}
                </span>
                <span class="spacer" />
                {props.mayFork && (
                  <button class="ghost small" onClick={() => props.onFork(r.revision)} disabled={props.busy === r.revision}
                    title="Start a new workflow from this revision; completed steps are reused">
                    {props.busy === r.revision ? 'Forking…' : 'Fork from here'}
                  </button>
                )}
              </div>
            </div>
          </li>
        );
      })}
      {props.error && <li class="error" role="alert">{props.error}</li>}
    </ol>
  );
}
