// The answer as Markdown (marked), sanitized (DOMPurify), with its [n]
// citations turned into links to the cited chunk.
import DOMPurify from 'dompurify';
import { Marked, type TokenizerAndRendererExtension } from 'marked';

function citeExtension(known: Set<number>): TokenizerAndRendererExtension {
  return {
    name: 'cite',
    level: 'inline',
    start: (src: string) => src.match(/\[\d/)?.index,
    tokenizer(src: string) {
      const m = /^\[(\d{1,4})\](?![(\[:])/.exec(src);
      if (!m || !known.has(Number(m[1]))) return undefined;
      return { type: 'cite', raw: m[0], n: Number(m[1]) };
    },
    renderer(tok) {
      const n = (tok as unknown as { n: number }).n;
      return `<a class="cite" href="#cite-${n}" data-cite="${n}" title="source ${n}">[${n}]</a>`;
    },
  };
}

/** renderAnswer returns safe HTML for md; [n] links only for the given citation numbers. */
export function renderAnswer(md: string, cited: number[]): string {
  const m = new Marked({ gfm: true, breaks: false, async: false });
  m.use({ extensions: [citeExtension(new Set(cited))] });
  const html = m.parse(md) as string;
  return DOMPurify.sanitize(html, { ALLOWED_ATTR: ['href', 'title', 'class', 'data-cite'], FORBID_TAGS: ['style', 'form', 'input', 'img'] });
}
