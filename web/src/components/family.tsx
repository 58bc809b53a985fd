// Family links a workflow to its parent and its children: the workflows a
// step of it started (capability `workflow`, or the tool-calling agent's
// tool calls), which name it in their metadata `parent_workflow`.
import type { Summary, WorkflowState } from '../api';
import { onLink } from '../router';
import { StatusPill } from './status';

export const wfHref = (id: string) => `/workflows/${encodeURIComponent(id)}`;

/** parentOf is the workflow (and step) that started wf, if any. */
export function parentOf(wf?: WorkflowState | null): { workflow: string; step?: string } | undefined {
  const p = wf?.metadata?.parent_workflow;
  return p ? { workflow: p, step: wf?.metadata?.parent_step } : undefined;
}

/** childOf is the child workflow a step's output names, if any. */
export function childOf(output: unknown): string | undefined {
  const c = (output as { child_workflow_id?: unknown } | null | undefined)?.child_workflow_id;
  return typeof c === 'string' && c ? c : undefined;
}

/** Family is the parent and children facts of a workflow's details. */
export function Family({ wf, children }: { wf: WorkflowState; children: Summary[] | null }) {
  const parent = parentOf(wf);
  return (
    <>
      {parent && (
        <>
          <dt>parent</dt>
          <dd class="mono" data-testid="parent-workflow">
            <a href={wfHref(parent.workflow)} onClick={onLink}>{parent.workflow}</a>
            {parent.step ? <span class="muted"> · step {parent.step}</span> : null}
            {wf.metadata?.depth ? <span class="muted"> · depth {wf.metadata.depth}</span> : null}
          </dd>
        </>
      )}
      {children && children.length > 0 && (
        <>
          <dt>children</dt>
          <dd data-testid="child-workflows">
            <ul class="plain">
              {children.map((c) => (
                <li key={c.workflow_id}>
                  <a class="mono" href={wfHref(c.workflow_id)} onClick={onLink}>{c.workflow_id}</a> <StatusPill state={c.status} />
                </li>
              ))}
            </ul>
          </dd>
        </>
      )}
    </>
  );
}
