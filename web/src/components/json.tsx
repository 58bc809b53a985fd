import { asRef, findRefs } from '../payloadref';
import { PayloadLink } from './payload';

/**
 * Json shows a value as indented JSON in a scrolling block. Given the
 * workflow's id, a value that is a large payload's reference is shown as
 * its size and type with a download link instead, and the references
 * within a larger value are listed above it.
 */
export function Json({ value, label, workflowId }: { value: unknown; label: string; workflowId?: string }) {
  const whole = workflowId ? asRef(value) : undefined;
  if (whole && workflowId) {
    return (
      <figure class="json">
        <figcaption>{label}</figcaption>
        <PayloadLink workflowId={workflowId} value={whole} />
      </figure>
    );
  }
  const refs = workflowId ? findRefs(value) : [];
  const text = value === undefined ? '—' : JSON.stringify(value, null, 2);
  return (
    <figure class="json">
      <figcaption>{label}</figcaption>
      {refs.map((r) => <PayloadLink key={r.pointer} workflowId={workflowId!} value={r.ref} pointer={r.pointer} />)}
      <pre tabIndex={0}>{text}</pre>
    </figure>
  );
}
