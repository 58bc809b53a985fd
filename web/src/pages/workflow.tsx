// A workflow: its DAG with live step states, the answer, artifacts, the
// event log, checkpoints and the controls. It follows the workflow over its
// WebSocket from offset 0 and, after any drop, from the last offset it
// showed: no event is missed or shown twice, and a reset is shown as such.
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { ApiError, get, post, terminal, wfPath, type Citation, type Revision, type Summary, type WorkflowState } from '../api';
import { useMayControl } from '../session_context';
import { Answer } from '../components/answer';
import { Checkpoints } from '../components/checkpoints';
import { DagView, type StepView } from '../components/dagview';
import { EventLog, type LogRow } from '../components/eventlog';
import { childOf, Family, wfHref } from '../components/family';
import { Json } from '../components/json';
import { PayloadLink } from '../components/payload';
import { asRef, type PayloadRef } from '../payloadref';
import { LinkDot, StatusPill } from '../components/status';
import { between, ms } from '../format';
import type { Frame, LinkState } from '../follow';
import { stream } from '../stream';
import { navigate, onLink } from '../router';
import { confirmationOf, noteConfirm, onEvent, stepState, type Confirmation, type Live } from '../steps';
import { Approvals, ConfirmDetail, Controls, Signals, waitingSignals } from './workflow_controls';
import { exposeLog, markShown } from './workflow_probe';

interface Artifact {
  id: string;
  name: string;
  step?: string;
  text: string;
  done: boolean;
  /** ref: the artifact's data is a large payload's reference, not text. */
  ref?: PayloadRef;
}

export function WorkflowPage({ id }: { id: string }) {
  const mayControl = useMayControl();
  const [wf, setWf] = useState<WorkflowState | null>(null);
  const [missing, setMissing] = useState('');
  const [link, setLink] = useState<{ s: LinkState; detail?: string }>({ s: 'connecting' });
  const [version, setVersion] = useState(0);
  const [selected, setSelected] = useState<string | undefined>();
  const [cite, setCite] = useState<number | undefined>();
  const [revisions, setRevisions] = useState<Revision[] | null>(null);
  const [children, setChildren] = useState<Summary[] | null>(null);
  const [resets, setResets] = useState<Frame[]>([]);
  const [now, setNow] = useState(Date.now());
  const [forking, setForking] = useState<{ rev?: number; error?: string }>({});
  const log = useRef<LogRow[]>([]);
  const live = useRef(new Map<string, Live>());
  const artifacts = useRef(new Map<string, Artifact>());
  const confirms = useRef(new Map<string, Confirmation>());
  const stats = useRef({ duplicates: 0, connections: 0 });
  const refreshing = useRef<{ timer: number | null; last: number }>({ timer: null, last: 0 });

  const alive = useRef(true);
  // loadState reads the checkpoint. Only the gateway's 404 (or a refusal)
  // is an answer; a failed fetch (a gateway restarting, a network drop) or
  // a 5xx keeps what is shown and tries again, backing off to 5 s.
  const loadState = (attempt = 0): void => {
    get<WorkflowState>(wfPath(id))
      .then((w) => setWf(w))
      .catch((e) => {
        if (!alive.current) return;
        if (e instanceof ApiError && e.status >= 400 && e.status < 500) {
          setMissing(e.status === 404 ? 'not_found' : String(e.message ?? e));
          return;
        }
        window.setTimeout(() => alive.current && loadState(attempt + 1), Math.min(5000, 250 * 2 ** attempt));
      });
  };
  const loadRevisions = () => get<{ revisions: Revision[] }>(`${wfPath(id)}/checkpoints`).then((r) => setRevisions(r.revisions)).catch(() => {});
  // loadChildren lists the workflows this one's steps started (first page).
  const loadChildren = () => get<{ workflows: Summary[] }>(`/v1/workflows?parent_workflow=${encodeURIComponent(id)}&limit=100`).then((r) => setChildren(r.workflows)).catch(() => {});
  // refresh reloads the checkpoint at most every 400 ms, trailing.
  const refresh = () => {
    const r = refreshing.current;
    if (r.timer !== null) return;
    const wait = Math.max(0, r.last + 400 - Date.now());
    r.timer = window.setTimeout(() => {
      r.timer = null;
      r.last = Date.now();
      loadState();
      loadRevisions();
      loadChildren();
    }, wait);
  };

  useEffect(() => {
    alive.current = true;
    setChildren(null);
    loadState();
    loadRevisions();
    loadChildren();
    const stop = stream({
      path: `${wfPath(id)}/ws`,
      finite: true,
      onState: (s, detail, connections) => {
        setLink({ s, detail });
        stats.current.connections = connections;
      },
      onFrames: (batch) => {
        let stepChanged = false;
        let ended = false;
        for (const { frame, verdict } of batch) {
          if (verdict === 'duplicate') {
            stats.current.duplicates++;
            continue;
          }
          if (verdict === 'reset') {
            log.current.push({ frame, kind: 'reset' });
            live.current.clear();
            confirms.current.clear();
            setResets((r) => [...r, frame]);
            if (frame.data?.tasks) setWf(frame.data as WorkflowState);
            stepChanged = true;
            continue;
          }
          if (verdict !== 'event') continue;
          log.current.push({ frame, kind: 'event' });
          if (onEvent(live.current, frame) && frame.type === 'status') stepChanged = true;
          noteConfirm(confirms.current, frame);
          if (frame.type === 'artifact') addArtifact(artifacts.current, frame);
          // a completed step's output comes with its status
          if (frame.type === 'status' && frame.data?.artifact) addArtifact(artifacts.current, { ...frame, data: frame.data.artifact });
          if (frame.type === 'status' && !frame.step_id) stepChanged = true;
          // A step that starts a child workflow says so ("child workflow
          // …", "tool call [n] …: running as workflow …"): list it.
          if (frame.type === 'progress' && /\bworkflow \S/.test(String(frame.data?.message ?? ''))) stepChanged = true;
          if (frame.type === 'complete' || frame.type === 'error' || frame.type === 'cancelled') ended = true;
        }
        setVersion((v) => v + 1);
        if (stepChanged || ended) refresh();
      },
    });
    const t = setInterval(() => setNow(Date.now()), 1000);
    return () => {
      alive.current = false;
      stop();
      clearInterval(t);
      if (refreshing.current.timer !== null) clearTimeout(refreshing.current.timer);
    };
  }, [id]);

  useEffect(() => exposeLog(id, () => ({ rows: log.current, duplicates: stats.current.duplicates, connections: stats.current.connections, link: link.s })), [id, link.s]);
  useEffect(() => markShown(log.current), [version]);

  const fork = async (revision: number) => {
    setForking({ rev: revision });
    try {
      const r = await post<{ workflow_id: string }>(`${wfPath(id)}/fork`, { revision });
      navigate(`/workflows/${encodeURIComponent(r.workflow_id)}`);
    } catch (e) {
      setForking({ error: `fork from revision ${revision} failed: ${e instanceof Error ? e.message : e}` });
    }
  };

  const done = terminal(wf?.status);
  const views = useMemo(() => {
    const out: Record<string, StepView> = {};
    for (const s of wf?.plan?.steps ?? []) {
      const t = wf?.tasks?.[s.id];
      const lv = live.current.get(s.id);
      const state = stepState(t, lv, done);
      const end = t?.completed_at ?? (state === 'running' || state === 'queued' ? now : undefined);
      out[s.id] = {
        state,
        worker: t?.worker,
        attempt: Math.max(t?.attempt ?? 0, lv?.dispatches ?? 0),
        durationMs: t?.run_ms ?? between(t?.dispatched_at, end),
        message: lv?.message,
        percent: lv?.percent,
      };
    }
    return out;
  }, [wf, version, now, done]);

  const citations: Citation[] = useMemo(() => {
    const r = wf?.result?.citations;
    if (Array.isArray(r)) return r;
    for (const t of Object.values(wf?.tasks ?? {})) {
      const c = (t.output as { citations?: Citation[] })?.citations;
      if (Array.isArray(c) && c.length) return c;
    }
    return [];
  }, [wf]);
  const chunks = useMemo(() => {
    const m = new Map<string, { id: string; title?: string; text?: string; doc_id?: string; source?: string; rrf_score?: number; score?: number }>();
    for (const t of Object.values(wf?.tasks ?? {})) {
      const hits = (t.output as { hits?: Array<{ id: string }> })?.hits;
      if (Array.isArray(hits)) for (const h of hits) m.set(h.id, h);
    }
    return m;
  }, [wf]);

  const answer = artifacts.current.get('answer');
  const answerText = answer?.text || (typeof wf?.result?.answer === 'string' ? wf.result.answer : '');
  const others = [...artifacts.current.values()].filter((a) => a.id !== 'answer');
  // The answer card is there from the start when a step writes one (no
  // jump when it streams in), and for any result once the workflow ended.
  const composes = (wf?.plan?.steps ?? []).some((s) => s.capability === 'summarize' || s.capability === 'detailed_report');
  const showAnswer = composes || !wf?.plan || artifacts.current.size > 0 || (done && !!wf?.result);
  const awaiting = (wf?.plan?.steps ?? []).filter((s) => views[s.id]?.state === 'awaiting').map((s) => s.id);
  const held: Record<string, Confirmation | undefined> = {};
  for (const s of wf?.plan?.steps ?? []) if (views[s.id]?.state === 'awaiting') held[s.id] = confirmationOf(confirms.current.get(s.id), wf?.tasks?.[s.id], s);

  if (missing) {
    return (
      <div class="page">
        <h1>Workflow not found</h1>
        <p class="muted" data-testid="not-found">{missing === 'not_found' ? `No workflow “${id}” for this tenant.` : missing}</p>
        <a href="/" onClick={onLink}>← All workflows</a>
      </div>
    );
  }
  const sel = selected ? wf?.plan?.steps.find((s) => s.id === selected) : undefined;
  const selTask = selected ? wf?.tasks?.[selected] : undefined;
  const citation = cite !== undefined ? citations.find((c) => c.n === cite) : undefined;
  const chunk = citation?.chunk_id ? chunks.get(citation.chunk_id) : undefined;
  const planH = wf?.plan ? undefined : 150;

  return (
    <div class="page wf">
      <div class="page-head">
        <a class="back" href="/" onClick={onLink} aria-label="All workflows">←</a>
        <h1 class="mono wf-id" title={id}>{id}</h1>
        {wf && <StatusPill state={wf.status} />}
        <LinkDot state={link.s} detail={link.detail} />
        <div class="spacer" />
        {wf && mayControl && <Controls id={id} wf={wf} awaiting={awaiting} onDone={refresh} />}
      </div>
      <p class="query">{wf?.query || (wf ? <span class="muted">explicit plan</span> : '\u00a0')}</p>
      {resets.length > 0 && (
        <div class="banner warn" role="alert" data-testid="reset-banner">
          <b>Event stream reset.</b> The gateway could not resume from offset this page had ({resets.at(-1)?.data?.reason === 'epoch' ? 'the event stream was recreated' : 'older events expired'}): events in between were not seen. The state below was reloaded from the checkpoint, and the log goes on from offset {resets.at(-1)?.data?.resume_from ?? '?'}.
        </div>
      )}
      <div class="wf-grid">
        <div class="wf-main">
          <section class="card" aria-labelledby="h-plan">
            <div class="card-head">
              <h2 id="h-plan">Plan</h2>
              <span class="muted small">{wf?.plan ? `${wf.plan.steps.length} steps in ${wf.stages?.length ?? '?'} stages` : 'planning…'}</span>
              <span class="spacer" />
              <span class="muted small">{wf ? `started ${new Date(wf.created_at ?? '').toLocaleTimeString()} · ${ms(between(wf.created_at, done ? wf.updated_at : now))}` : ''}</span>
            </div>
            <div style={planH ? { height: `${planH}px` } : undefined}>
              {wf?.plan && <DagView steps={wf.plan.steps} stages={wf.stages} views={views} selected={selected} onSelect={(s) => { setSelected(s); setCite(undefined); }} />}
            </div>
          </section>
          {awaiting.length > 0 && mayControl && <Approvals id={id} steps={awaiting} confirms={held} onDone={refresh} />}
          {wf && mayControl && waitingSignals(wf).length > 0 && <Signals id={id} names={waitingSignals(wf)} onDone={refresh} />}
          {awaiting.length > 0 && !mayControl && (
            <div class="banner">
              Step {awaiting.join(', ')} awaits approval by someone with a client token.
              {awaiting.filter((s) => held[s]).map((s) => <ConfirmDetail key={s} step={s} c={held[s]!} />)}
            </div>
          )}
          {showAnswer && <section class="card" aria-labelledby="h-answer">
            <div class="card-head"><h2 id="h-answer">{answerText || !done || !wf?.result ? "Answer" : "Result"}</h2>{answer && !answer.done && !done && <span class="muted small">streaming…</span>}</div>
            {answer?.ref ? (
              <PayloadLink workflowId={id} value={answer.ref} />
            ) : answerText || !done || !wf?.result ? (
              <Answer text={answerText} streaming={!done} citations={citations} onCite={(n) => { setCite(n); setSelected(undefined); }} active={cite} />
            ) : (
              <Json label="The outputs of the plan's last steps" value={wf.result} workflowId={id} />
            )}
            {others.length > 0 && (
              <div class="artifacts">
                {others.map((a) => (
                  <details key={a.id} open={!a.done}>
                    <summary><b>{a.name}</b> <span class="muted small">{a.step}{a.ref ? '' : ` · ${a.text.length} chars`}{a.done ? '' : ' · streaming'}</span></summary>
                    {a.ref ? <PayloadLink workflowId={id} value={a.ref} /> : <pre>{a.text}</pre>}
                  </details>
                ))}
              </div>
            )}
          </section>}
          <section class="card" aria-labelledby="h-log">
            <div class="card-head">
              <h2 id="h-log">Events</h2>
              <span class="muted small" data-testid="log-count" data-count={log.current.filter((r) => r.kind === 'event').length}>
                {log.current.length} events{log.current.length ? ` · offsets ${log.current.find((r) => r.kind === 'event')?.frame.offset ?? ''}–${log.current.at(-1)?.frame.offset}` : ''}
              </span>
            </div>
            <EventLog rows={log.current} version={version} />
          </section>
        </div>
        <aside class="wf-side">
          <section class="card sticky" aria-labelledby="h-detail" data-testid="detail">
            {citation ? (
              <>
                <div class="card-head"><h2 id="h-detail">Source [{citation.n}]</h2><span class="spacer" /><button class="ghost small" onClick={() => setCite(undefined)} aria-label="Close">✕</button></div>
                <p><b>{citation.title ?? citation.doc_id}</b></p>
                <p class="muted small mono">{citation.chunk_id} · {citation.source}</p>
                {chunk?.text ? <blockquote class="chunk" data-testid="chunk">{chunk.text}</blockquote> : <p class="muted">The cited chunk is not in this workflow's search output.</p>}
                {chunk?.rrf_score !== undefined && <p class="muted small">RRF score {chunk.rrf_score.toFixed(4)}</p>}
              </>
            ) : sel ? (
              <>
                <div class="card-head"><h2 id="h-detail" class="mono">{sel.id}</h2><StatusPill state={views[sel.id]?.state ?? 'pending'} label={views[sel.id]?.state} /><span class="spacer" /><button class="ghost small" onClick={() => setSelected(undefined)} aria-label="Close">✕</button></div>
                <dl class="facts">
                  <dt>capability</dt><dd class="mono">{sel.capability}{selTask?.fell_back ? ` → ${selTask.fell_back}` : ''}</dd>
                  <dt>worker</dt><dd class="mono">{selTask?.worker ?? '—'}</dd>
                  <dt>attempts</dt><dd>{selTask?.attempt ?? 0}</dd>
                  <dt>queued</dt><dd>{ms(selTask?.queued_ms)}</dd>
                  <dt>ran</dt><dd>{ms(selTask?.run_ms ?? views[sel.id]?.durationMs)}</dd>
                  {sel.depends_on?.length ? <><dt>after</dt><dd class="mono">{sel.depends_on.join(', ')}</dd></> : null}
                  {selTask?.approval && <><dt>approval</dt><dd>{selTask.approval.state}{selTask.approval.comment ? ` — “${selTask.approval.comment}”` : ''}</dd></>}
                  {selTask?.error && <><dt>error</dt><dd class="error">{selTask.error}</dd></>}
                  {childOf(selTask?.output) && <><dt>child</dt><dd class="mono" data-testid="step-child"><a href={wfHref(childOf(selTask?.output)!)} onClick={onLink}>{childOf(selTask?.output)}</a></dd></>}
                </dl>
                <Json label="Input" value={sel.input ?? { query: wf?.query }} />
                <Json label="Output" value={selTask?.output} workflowId={id} />
              </>
            ) : (
              <>
                <div class="card-head"><h2 id="h-detail">Details</h2></div>
                <p class="muted small">Select a step to see its input and output, or a citation to see its source.</p>
                {wf && (
                  <dl class="facts">
                    <dt>tenant</dt><dd class="mono">{wf.tenant_id}</dd>
                    <dt>phase</dt><dd>{wf.phase}</dd>
                    <dt>resumes</dt><dd>{wf.resume_count ?? 0}</dd>
                    <Family wf={wf} children={children} />
                    {wf.error ? <><dt>error</dt><dd class="error">{typeof wf.error === 'string' ? wf.error : JSON.stringify(wf.error)}</dd></> : null}
                  </dl>
                )}
              </>
            )}
          </section>
          <section class="card" aria-labelledby="h-cp">
            <div class="card-head"><h2 id="h-cp">Checkpoints</h2></div>
            <Checkpoints revisions={revisions} mayFork={mayControl} busy={forking.rev} error={forking.error} onFork={fork} />
          </section>
        </aside>
      </div>
    </div>
  );
}


function addArtifact(m: Map<string, Artifact>, f: Frame) {
  const d = f.data ?? {};
  const id: string = d.artifact_id ?? d.name ?? 'artifact';
  const ref = asRef(d.data);
  if (ref) {
    // A large artifact: its reference stands for all of it.
    m.set(id, { id, name: d.name ?? id, step: d.step_id ?? f.step_id, text: '', done: !!d.last_chunk || !d.append, ref });
    return;
  }
  const chunk = typeof d.data === 'string' ? d.data : JSON.stringify(d.data, null, 2);
  const had = m.get(id);
  const text = d.append && had ? had.text + chunk : chunk;
  m.set(id, { id, name: d.name ?? id, step: d.step_id ?? f.step_id, text, done: !!d.last_chunk });
}
