// Workflows: the tenant's workflows, live. The list comes from GET
// /v1/workflows (?schedule_id= keeps one schedule's runs); changes come
// over the tenant feed (GET /v1/ws), resumed from its offset after a drop;
// a reset reloads the list. Bulk control acts on every workflow the
// page's filter matches (POST /v1/workflows/bulk).
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { ApiError, get, post, terminal, wfPath, type Summary, type WorkflowState } from '../api';
import { bulkFilter, describe, type Action, type BulkFilter, type BulkResult } from '../bulk';
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

async function loadAll(signal: AbortSignal, schedule: string): Promise<Summary[]> {
  const out: Summary[] = [];
  let next: string | undefined = '/v1/workflows?limit=1000' + (schedule ? `&schedule_id=${encodeURIComponent(schedule)}` : '');
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
  // sched keeps the runs of one schedule (their metadata names it).
  const [sched, setSched] = useState(new URLSearchParams(location.search).get('schedule_id') ?? '');
  const schedRef = useRef(sched);
  schedRef.current = sched;
  const reloadTimer = useRef<number | null>(null);

  // the list, and again after a reset of the feed
  useEffect(() => {
    const ac = new AbortController();
    loadAll(ac.signal, sched)
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
  }, [reloads, sched]);
  const showAll = () => {
    rows.current.clear();
    setLoaded(false);
    setSched('');
    history.replaceState(null, '', '/');
  };

  // the live feed
  useEffect(() => {
    const stop = stream({
      path: '/v1/ws',
      cursorless: true,
      onState: (s) => setLink(s),
      onFrames: (batch) => {
        let changed = false;
        for (const { frame, verdict } of batch) {
          if (verdict === 'reset') setReloads((n) => n + 1);
          if (verdict !== 'event' || frame.type !== 'workflow_status') continue;
          const wid = frame.data?.workflow_id ?? frame.workflow_id;
          if (schedRef.current && wid && !rows.current.has(wid)) {
            // The feed does not say which schedule started a workflow:
            // ask the list again, at most twice a second.
            reloadTimer.current ??= window.setTimeout(() => {
              reloadTimer.current = null;
              setReloads((n) => n + 1);
            }, 500);
            continue;
          }
          apply(rows.current, frame);
          changed = true;
        }
        if (changed) setVersion((v) => v + 1);
      },
    });
    return () => {
      stop();
      if (reloadTimer.current !== null) clearTimeout(reloadTimer.current);
    };
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
      {sched && (
        <div class="banner" data-testid="schedule-filter">
          Runs of schedule <b class="mono">{sched}</b>{' '}
          <a href="/schedules" onClick={onLink}>Schedules</a> · <button class="linkish" onClick={showAll} data-action="show-all">Show all workflows</button>
        </div>
      )}
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
      {mayControl && <Bulk chip={filter} sched={sched} onDone={() => setReloads((n) => n + 1)} />}
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

const verbs: Record<Action, [string, string]> = { cancel: ['Cancel', 'canceled'], pause: ['Pause', 'paused'], unpause: ['Unpause', 'unpaused'] };

/**
 * Bulk cancels, pauses or unpauses every workflow the page's filter
 * matches — its status chip and schedule, with metadata pairs and an age
 * typed here (the text search is the page's own and is not sent) —
 * after a confirmation that says the filter in words.
 */
function Bulk({ chip, sched, onDone }: { chip: string; sched: string; onDone: () => void }) {
  const [open, setOpen] = useState(false);
  const [metadata, setMetadata] = useState('');
  const [older, setOlder] = useState('');
  const [asking, setAsking] = useState<{ action: Action; filter: BulkFilter } | null>(null);
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<BulkResult | null>(null);
  const [error, setError] = useState('');
  const made = bulkFilter(chip, metadata, older, sched);
  if (!open) {
    return (
      <div class="bulk-toggle">
        <button class="ghost small" onClick={() => setOpen(true)} data-action="bulk">Bulk actions…</button>
      </div>
    );
  }
  const ask = (action: Action) => {
    setResult(null);
    setError('');
    if (made.filter) setAsking({ action, filter: made.filter });
  };
  const run = async () => {
    if (!asking) return;
    setBusy(true);
    try {
      const r = await post<BulkResult>('/v1/workflows/bulk', { action: asking.action, reason: `${verbs[asking.action][1]} in bulk from the dashboard`, filter: asking.filter });
      setResult(r);
      onDone();
    } catch (e) {
      setError(e instanceof ApiError ? `${e.message}${e.problems.length ? ' (' + e.problems.map((p) => `${p.pointer ?? p.name ?? ''} ${p.message}`).join('; ') + ')' : ''}` : String(e));
    } finally {
      setBusy(false);
      setAsking(null);
    }
  };
  return (
    <section class="card bulk" aria-labelledby="h-bulk" data-testid="bulk">
      <div class="card-head">
        <h2 id="h-bulk">Bulk actions</h2>
        <span class="muted small">act on every workflow the filter matches, not only those shown</span>
        <span class="spacer" />
        <button class="ghost small" onClick={() => { setOpen(false); setAsking(null); }} aria-label="Close bulk actions">✕</button>
      </div>
      <div class="row">
        <label for="bulk-md" class="small">Metadata</label>
        <input id="bulk-md" class="mono short" placeholder="batch=b7, team=ops" value={metadata} data-field="bulk-metadata"
          onInput={(e) => { setMetadata((e.target as HTMLInputElement).value); setAsking(null); }} />
        <label for="bulk-age" class="small">Older than</label>
        <input id="bulk-age" class="mono tiny" placeholder="1h" value={older} data-field="bulk-older"
          onInput={(e) => { setOlder((e.target as HTMLInputElement).value); setAsking(null); }} />
        <span class="spacer" />
        <button class="danger-outline" disabled={!made.filter || busy} onClick={() => ask('cancel')} data-action="bulk-cancel">Cancel matching</button>
        <button disabled={!made.filter || busy} onClick={() => ask('pause')} data-action="bulk-pause">Pause matching</button>
        <button class="ghost" disabled={!made.filter || busy} onClick={() => ask('unpause')} data-action="bulk-unpause">Unpause matching</button>
      </div>
      <p class="muted small" data-testid="bulk-filter">
        {made.filter ? <>Filter: <b>{describe(made.filter)}</b> (the status chip, the schedule shown and the fields above; the text search is not part of it).</> : <span class="error">{made.error}</span>}
      </p>
      {asking && (
        <div class="banner warn" role="alertdialog" aria-labelledby="bulk-q" data-testid="bulk-confirm">
          <span id="bulk-q">{verbs[asking.action][0]} <b>every</b> workflow with {describe(asking.filter)}?{asking.action === 'cancel' ? ' A canceled workflow cannot be resumed.' : ''}</span>{' '}
          <button class={asking.action === 'cancel' ? 'danger' : 'primary'} disabled={busy} onClick={run} data-action="bulk-confirm" autoFocus>
            {busy ? 'Working…' : `Yes, ${verbs[asking.action][0].toLowerCase()} them`}
          </button>
          <button class="ghost" onClick={() => setAsking(null)}>No</button>
        </div>
      )}
      {error && <p class="error small" role="alert">{error}</p>}
      {result && (
        <p class="small" data-testid="bulk-result" data-matched={result.matched} data-applied={result.applied}>
          {verbs[result.action][0]}: matched <b>{result.matched}</b>, {verbs[result.action][1]} <b>{result.applied}</b>
          {result.not_applied ? `, ${result.not_applied} no longer applicable (ended or already ${verbs[result.action][1]})` : ''}
          {result.failed ? <span class="error">, {result.failed} failed (no orchestrator answered)</span> : ''}
          {result.limited ? ' — cut short at the limit: run it again for the rest' : ''}.
        </p>
      )}
    </section>
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
