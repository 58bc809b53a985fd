// Workflows: the tenant's workflows, live. The list comes from GET
// /v1/workflows; changes come over the tenant feed (GET /v1/ws), resumed
// from its offset after a drop; a reset reloads the list.
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { get, terminal, wfPath, type Summary, type WorkflowState } from '../api';
import { useMayControl } from '../session_context';
import { LinkDot, StatusPill } from '../components/status';
import { ago, between, ms } from '../format';
import type { Frame, LinkState } from '../follow';
import { stream } from '../stream';
import { onLink } from '../router';

const pageSize = 25;
const filters: Array<[string, string, (s: string) => boolean]> = [
  ['all', 'All', () => true],
  ['running', 'Running', (s) => s === 'submitted' || s === 'working'],
  ['input-required', 'Awaiting approval', (s) => s === 'input-required'],
  ['completed', 'Completed', (s) => s === 'completed'],
  ['failed', 'Failed', (s) => s === 'failed' || s === 'rejected'],
  ['canceled', 'Canceled', (s) => s === 'canceled'],
];

async function loadAll(signal: AbortSignal): Promise<Summary[]> {
  const out: Summary[] = [];
  let next: string | undefined = '/v1/workflows?limit=1000';
  for (let i = 0; next && i < 10; i++) {
    const r: { workflows: Summary[]; next?: string } = await get(next, signal);
    out.push(...r.workflows);
    next = r.next;
  }
  return out;
}

export function WorkflowsPage() {
  const mayControl = useMayControl();
  const rows = useRef(new Map<string, Summary>());
  const [version, setVersion] = useState(0);
  const [loaded, setLoaded] = useState(false);
  const [error, setError] = useState('');
  const [link, setLink] = useState<LinkState>('connecting');
  const [filter, setFilter] = useState(new URLSearchParams(location.search).get('status') ?? 'all');
  const [text, setText] = useState('');
  const [page, setPage] = useState(0);
  const [now, setNow] = useState(Date.now());
  const [reloads, setReloads] = useState(0);

  // the list, and again after a reset of the feed
  useEffect(() => {
    const ac = new AbortController();
    loadAll(ac.signal)
      .then((list) => {
        for (const s of list) {
          const had = rows.current.get(s.workflow_id);
          // a feed frame newer than the listing wins
          if (!had || (had.updated_at ?? '') <= (s.updated_at ?? '')) rows.current.set(s.workflow_id, { ...had, ...s });
        }
        setLoaded(true);
        setVersion((v) => v + 1);
      })
      .catch((e) => !ac.signal.aborted && setError(String(e.message ?? e)));
    return () => ac.abort();
  }, [reloads]);

  // the live feed
  useEffect(() => {
    return stream({
      path: '/v1/ws',
      cursorless: true,
      onState: (s) => setLink(s),
      onFrames: (batch) => {
        let changed = false;
        for (const { frame, verdict } of batch) {
          if (verdict === 'reset') setReloads((n) => n + 1);
          if (verdict !== 'event' || frame.type !== 'workflow_status') continue;
          apply(rows.current, frame);
          changed = true;
        }
        if (changed) setVersion((v) => v + 1);
      },
    });
  }, []);

  // running durations tick
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), 1000);
    return () => clearInterval(t);
  }, []);

  const shown = useMemo(() => {
    const pred = filters.find((f) => f[0] === filter)?.[2] ?? (() => true);
    const q = text.trim().toLowerCase();
    return [...rows.current.values()]
      .filter((r) => pred(r.status) && (!q || r.workflow_id.toLowerCase().includes(q) || (r.query ?? '').toLowerCase().includes(q)))
      .sort((a, b) => (b.created_at ?? '').localeCompare(a.created_at ?? '') || b.workflow_id.localeCompare(a.workflow_id));
  }, [version, filter, text]);
  const pages = Math.max(1, Math.ceil(shown.length / pageSize));
  const p = Math.min(page, pages - 1);
  const visible = shown.slice(p * pageSize, (p + 1) * pageSize);

  // plan sizes of the visible rows, once each
  const asked = useRef(new Set<string>());
  useEffect(() => {
    for (const r of visible) {
      if (r.steps !== undefined || asked.current.has(r.workflow_id)) continue;
      asked.current.add(r.workflow_id);
      get<WorkflowState>(wfPath(r.workflow_id))
        .then((w) => {
          const row = rows.current.get(r.workflow_id);
          if (row) {
            row.steps = w.plan?.steps?.length ?? 0;
            setVersion((v) => v + 1);
          }
        })
        .catch(() => {});
    }
  }, [visible.map((r) => r.workflow_id).join()]);

  const counts = useMemo(() => {
    const c: Record<string, number> = {};
    for (const [k] of filters) c[k] = 0;
    for (const r of rows.current.values()) for (const [k, , pred] of filters) if (pred(r.status)) c[k]++;
    return c;
  }, [version]);

  return (
    <div class="page">
      <div class="page-head">
        <h1>Workflows</h1>
        <LinkDot state={link} />
        <div class="spacer" />
        {mayControl && <a class="button primary" href="/submit" onClick={onLink} data-action="new-workflow">New workflow</a>}
      </div>
      <div class="toolbar" role="search">
        <div class="chips" role="group" aria-label="Filter by status">
          {filters.map(([k, label]) => (
            <button class={`chip ${filter === k ? 'on' : ''}`} aria-pressed={filter === k} onClick={() => { setFilter(k); setPage(0); }} data-filter={k}>
              {label} <span class="count">{counts[k] ?? 0}</span>
            </button>
          ))}
        </div>
        <input class="search" type="search" placeholder="Filter by id or query…" aria-label="Filter by id or query" value={text}
          onInput={(e) => { setText((e.target as HTMLInputElement).value); setPage(0); }} />
      </div>
      {error && <p class="error" role="alert">{error}</p>}
      <div class="card table-card">
        <table class="list" data-testid="workflows">
          <thead>
            <tr>
              <th class="c-status">Status</th>
              <th>Workflow</th>
              <th class="c-query">Query</th>
              <th class="num">Steps</th>
              <th>Started</th>
              <th class="num">Duration</th>
              <th class="num">Resumes</th>
            </tr>
          </thead>
          <tbody>
            {visible.map((r) => (
              <tr key={r.workflow_id} data-id={r.workflow_id} data-status={r.status}>
                <td><StatusPill state={r.status} /></td>
                <td class="mono"><a href={`/workflows/${encodeURIComponent(r.workflow_id)}`} onClick={onLink}>{short(r.workflow_id)}</a></td>
                <td class="c-query" title={r.query}>{r.query || <span class="muted">explicit plan</span>}</td>
                <td class="num">{r.steps ?? '—'}</td>
                <td title={r.created_at}>{ago(r.created_at, now)}</td>
                <td class="num">{ms(between(r.created_at, terminal(r.status) ? r.updated_at : now))}</td>
                <td class="num">{r.resume_count || ''}</td>
              </tr>
            ))}
            {loaded && visible.length === 0 && (
              <tr><td colSpan={7} class="empty">{rows.current.size === 0 ? 'No workflows yet. Submit one to see it here, live.' : 'No workflow matches the filter.'}</td></tr>
            )}
            {!loaded && !error && <tr><td colSpan={7} class="empty">Loading…</td></tr>}
          </tbody>
        </table>
      </div>
      <div class="pager">
        <span class="muted">{shown.length === 0 ? '0' : `${p * pageSize + 1}–${Math.min(shown.length, (p + 1) * pageSize)}`} of {shown.length}</span>
        <button class="ghost" disabled={p === 0} onClick={() => setPage(p - 1)}>← Newer</button>
        <button class="ghost" disabled={p >= pages - 1} onClick={() => setPage(p + 1)}>Older →</button>
      </div>
    </div>
  );
}

/** apply merges one workflow_status frame of the tenant feed into the rows. */
export function apply(rows: Map<string, Summary>, f: Frame): void {
  const d = f.data ?? {};
  const id: string = d.workflow_id ?? f.workflow_id;
  if (!id) return;
  const had = rows.get(id);
  const at: string = d.time ?? f.time ?? '';
  if (had && (had.updated_at ?? '') > at && had.status !== 'submitted') return;
  const planned = /planned (\d+) steps?/.exec(d.message ?? '');
  rows.set(id, {
    ...had,
    workflow_id: id,
    status: d.state ?? had?.status ?? 'submitted',
    query: d.query ?? had?.query,
    created_at: d.created_at ?? had?.created_at,
    updated_at: at || had?.updated_at,
    steps: planned ? Number(planned[1]) : had?.steps,
  });
}

function short(id: string): string {
  return id.length > 24 ? id.slice(0, 8) + '…' + id.slice(-8) : id;
}
