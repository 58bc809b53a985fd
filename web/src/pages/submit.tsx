// Submit: a query, or an explicit plan edited as JSON and validated against
// the repository's schemas as it is typed, each problem shown at its JSON
// pointer (click it to select the offending text).
import { useMemo, useRef, useState } from 'preact/hooks';
import { ApiError, post } from '../api';
import { navigate } from '../router';
import { lineOf, locate, parseJSON, validateRequest, type Problem } from '../schema';
import { useMayControl } from '../session_context';

const examples: Record<string, object> = {
  diamond: {
    steps: [
      { id: 'fetch', capability: 'echo', input: { say: 'start' } },
      { id: 'left', capability: 'sleep', input: { ms: 800 }, depends_on: ['fetch'] },
      { id: 'right', capability: 'sleep', input: { ms: 1200 }, depends_on: ['fetch'] },
      { id: 'join', capability: 'echo', depends_on: ['left', 'right'] },
    ],
  },
  approval: {
    steps: [
      { id: 'draft', capability: 'echo', input: { text: 'a draft to review' } },
      { id: 'review', capability: 'echo', depends_on: ['draft'], requires_approval: true },
      { id: 'publish', capability: 'echo', depends_on: ['review'] },
    ],
  },
  rag: {
    steps: [
      { id: 'search', capability: 'search', input: { query: 'how does a ServeMux match patterns?' } },
      { id: 'answer', capability: 'summarize', input: { query: 'how does a ServeMux match patterns?' }, depends_on: ['search'] },
    ],
  },
};

interface Shown extends Problem {
  line?: number;
  span?: [number, number];
}

export function SubmitPage() {
  const mayControl = useMayControl();
  const [mode, setMode] = useState<'query' | 'plan'>('query');
  const [query, setQuery] = useState('');
  const [plan, setPlan] = useState(JSON.stringify(examples.diamond, null, 2));
  const [wfId, setWfId] = useState('');
  const [server, setServer] = useState<Problem[]>([]);
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const editor = useRef<HTMLTextAreaElement>(null);

  const body = useMemo((): { doc?: Record<string, unknown>; problems: Shown[] } => {
    const doc: Record<string, unknown> = {};
    if (wfId.trim()) doc.workflow_id = wfId.trim();
    if (mode === 'query') {
      if (query.trim()) doc.query = query.trim();
      return { doc, problems: validateRequest(doc).filter((p) => p.pointer !== '/workflow_id' || wfId.trim() !== '') };
    }
    const parsed = parseJSON(plan);
    if (parsed.error) {
      const at = parsed.error.at;
      return { problems: [{ pointer: '/plan', message: `not JSON: ${parsed.error.message}`, line: lineOf(plan, at).line, span: [at, Math.min(plan.length, at + 1)] }] };
    }
    doc.plan = parsed.value;
    const problems: Shown[] = validateRequest(doc).map((p) => {
      if (!p.pointer.startsWith('/plan')) return p;
      const span = locate(plan, p.pointer.slice('/plan'.length));
      return { ...p, span, line: lineOf(plan, span[0]).line };
    });
    return { doc, problems };
  }, [mode, query, plan, wfId]);

  const select = (p: Shown) => {
    const el = editor.current;
    if (!el || !p.span) return;
    el.focus();
    el.setSelectionRange(p.span[0], p.span[1]);
    // scroll the selection into view: one line is about 20 px
    el.scrollTop = Math.max(0, ((p.line ?? 1) - 3) * 20);
  };

  const submit = async (e: Event) => {
    e.preventDefault();
    if (!body.doc || body.problems.length) return;
    setBusy(true);
    setError('');
    setServer([]);
    try {
      const r = await post<{ workflow_id: string }>('/v1/workflows', body.doc);
      navigate(`/workflows/${encodeURIComponent(r.workflow_id)}`);
    } catch (err) {
      if (err instanceof ApiError) {
        setError(err.message);
        setServer(err.problems.map((p) => ({ pointer: p.pointer ?? p.name ?? '', message: p.message })));
      } else setError(String(err));
    } finally {
      setBusy(false);
    }
  };
  const ready = !!body.doc && body.problems.length === 0 && (mode === 'plan' || query.trim() !== '');

  if (!mayControl) {
    return (
      <div class="page narrow">
        <h1>Submit</h1>
        <p class="muted" data-testid="read-only">Your token is read-only (viewer): it may follow workflows but not start them.</p>
      </div>
    );
  }
  return (
    <div class="page narrow">
      <h1>New workflow</h1>
      <div class="tabs" role="tablist">
        <button role="tab" data-tab="query" aria-selected={mode === 'query'} class={mode === 'query' ? 'on' : ''} onClick={() => setMode('query')}>Ask a question</button>
        <button role="tab" data-tab="plan" aria-selected={mode === 'plan'} class={mode === 'plan' ? 'on' : ''} onClick={() => setMode('plan')}>Explicit plan</button>
      </div>
      <form class="card submit" onSubmit={submit}>
        {mode === 'query' ? (
          <>
            <label for="q">Query</label>
            <textarea id="q" rows={3} value={query} placeholder="e.g. how does a ServeMux match patterns?" data-testid="query"
              onInput={(e) => setQuery((e.target as HTMLTextAreaElement).value)}
              onKeyDown={(e) => { if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) submit(e); }} />
            <p class="muted small">The planner picks the agents; Ctrl+Enter submits.</p>
          </>
        ) : (
          <>
            <div class="row">
              <label for="plan">Plan (JSON, checked against schemas/plan.json)</label>
              <span class="spacer" />
              <span class="muted small">Examples:</span>
              {Object.keys(examples).map((k) => (
                <button type="button" class="ghost small" key={k} onClick={() => setPlan(JSON.stringify(examples[k], null, 2))}>{k}</button>
              ))}
            </div>
            <textarea id="plan" ref={editor} class="editor mono" rows={18} spellcheck={false} value={plan} data-testid="plan"
              onInput={(e) => setPlan((e.target as HTMLTextAreaElement).value)} aria-describedby="plan-problems" aria-invalid={body.problems.length > 0} />
          </>
        )}
        <ul id="plan-problems" class="problems" aria-live="polite" data-testid="problems">
          {(mode === 'plan' || query.trim() !== '') && body.problems.map((p) => (
            <li key={p.pointer + p.message}>
              <button type="button" class="linkish" onClick={() => select(p)} data-pointer={p.pointer}>
                <code>{p.pointer || '/'}</code>{p.line ? <span class="muted small"> line {p.line}</span> : null}
              </button>{' '}{p.message}
            </li>
          ))}
          {server.map((p) => <li key={'s' + p.pointer + p.message} class="error"><code>{p.pointer || '/'}</code> {p.message}</li>)}
        </ul>
        <div class="row">
          <label for="wfid" class="small">Workflow id <span class="muted">(optional)</span></label>
          <input id="wfid" class="mono short" value={wfId} placeholder="generated" onInput={(e) => setWfId((e.target as HTMLInputElement).value)} />
          <span class="spacer" />
          {error && <span class="error small" role="alert">{error}</span>}
          <button class="primary" type="submit" disabled={!ready || busy} data-testid="submit">{busy ? 'Submitting…' : 'Submit'}</button>
        </div>
      </form>
    </div>
  );
}
