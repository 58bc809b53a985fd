// A large payload's reference, shown as what it is — its size and content
// type — with a link that saves it. The link is a plain same-origin one:
// the dashboard's token is the agentbus_token cookie, which the browser
// sends with it (same-origin, so the gateway's cross-site check passes),
// and the gateway answers ?download=1 as an attachment, so the bytes are
// never rendered in the page.
import { bytes, fileName, payloadHref, type PayloadRef } from '../payloadref';

export function PayloadLink({ workflowId, value, pointer }: { workflowId: string; value: PayloadRef; pointer?: string }) {
  const href = payloadHref(workflowId, value);
  return (
    <div class="payload" data-testid="payload-ref" data-key={value.key}>
      <span class="payload-icon" aria-hidden="true">⇩</span>
      <span>
        {pointer ? <span class="mono small">{pointer} </span> : null}
        <b>{bytes(value.size)}</b> <span class="muted">{value.content_type || 'application/octet-stream'}</span>
        <span class="muted small"> · stored as a large payload{value.sha256 ? ` · sha256 ${value.sha256.slice(0, 12)}…` : ''}</span>
      </span>
      {href ? (
        <a class="button small" href={href} download={fileName(value)} data-action="download" title={value.key}>Download</a>
      ) : (
        <span class="muted small" title={value.key}>of another workflow</span>
      )}
    </div>
  );
}
