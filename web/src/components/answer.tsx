// The answer, streamed as its artifact chunks arrive, rendered as Markdown
// with every [n] linked to the chunk it cites.
import { useMemo } from 'preact/hooks';
import type { Citation } from '../api';
import { renderAnswer } from '../markdown';

export function Answer(props: { text: string; streaming: boolean; citations: Citation[]; onCite: (n: number) => void; active?: number }) {
  const html = useMemo(() => renderAnswer(props.text, props.citations.map((c) => c.n)), [props.text, props.citations]);
  const click = (e: MouseEvent) => {
    const a = (e.target as HTMLElement).closest('a');
    if (!a) return;
    const n = a.getAttribute('data-cite');
    if (n) {
      e.preventDefault();
      props.onCite(Number(n));
    } else {
      // links in an answer leave the dashboard in a new tab, never replace it
      a.setAttribute('target', '_blank');
      a.setAttribute('rel', 'noopener noreferrer');
    }
  };
  return (
    <div class="answer" data-testid="answer" aria-busy={props.streaming}>
      {props.text ? (
        <div class="md" onClick={click} dangerouslySetInnerHTML={{ __html: html }} />
      ) : (
        <p class="muted">{props.streaming ? 'The answer streams here as it is written…' : 'No answer (yet).'}</p>
      )}
      {props.streaming && props.text && <span class="caret" aria-hidden="true" />}
      {props.citations.length > 0 && (
        <ol class="sources" aria-label="Sources">
          {props.citations.map((c) => (
            <li key={c.n} class={props.active === c.n ? 'on' : ''}>
              <button class="linkish" onClick={() => props.onCite(c.n)} data-cite={c.n}>
                <span class="cite-n">[{c.n}]</span> {c.title ?? c.doc_id ?? c.chunk_id}
              </button>
            </li>
          ))}
        </ol>
      )}
    </div>
  );
}
