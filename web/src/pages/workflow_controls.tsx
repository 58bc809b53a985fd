// The buttons that change a workflow: cancel (confirmed in place), resume,
// pause and unpause, a signal to a wait step, and the approval of steps
// that wait for a person. Viewers never see them.
import { useState } from 'preact/hooks';
import { ApiError, post, terminal, wfPath, type WorkflowState } from '../api';
import type { Confirmation } from '../steps';

function message(e: unknown): string {
  if (e instanceof ApiError) return e.problems.length ? `${e.message} (${e.problems.map((p) => p.message).join('; ')})` : e.message;
  return String(e);
}

export function Controls(props: { id: string; wf: WorkflowState; awaiting: string[]; onDone: () => void }) {
  const [confirm, setConfirm] = useState(false);
  const [busy, setBusy] = useState('');
  const [error, setError] = useState('');
  const act = async (what: string, path: string, body: unknown) => {
    setBusy(what);
    setError('');
    try {
      await post(`${wfPath(props.id)}/${path}`, body);
      props.onDone();
    } catch (e) {
      setError(message(e));
    } finally {
      setBusy('');
      setConfirm(false);
    }
  };
  const over = terminal(props.wf.status);
  return (
    <div class="controls" data-testid="controls">
      {error && <span class="error small" role="alert">{error}</span>}
      {!over && !confirm && (
        <button class="danger-outline" onClick={() => setConfirm(true)} data-action="cancel">Cancel workflow</button>
      )}
      {!over && confirm && (
        <>
          <button class="danger" onClick={() => act('cancel', 'cancel', { reason: 'canceled from the dashboard' })} disabled={busy !== ''} data-action="confirm-cancel" autoFocus>
            {busy === 'cancel' ? 'Canceling…' : 'Confirm cancel'}
          </button>
          <button class="ghost" onClick={() => setConfirm(false)}>Keep running</button>
        </>
      )}
      {!over && !props.wf.paused && (
        <button class="ghost" onClick={() => act('pause', 'pause', { reason: 'paused from the dashboard' })} disabled={busy !== ''} data-action="pause">
          {busy === 'pause' ? 'Pausing…' : 'Pause'}
        </button>
      )}
      {!over && props.wf.paused && (
        <button onClick={() => act('unpause', 'unpause', {})} disabled={busy !== ''} data-action="unpause">
          {busy === 'unpause' ? 'Unpausing…' : 'Unpause'}
        </button>
      )}
      {(props.wf.status === 'failed' || props.wf.status === 'rejected') && (
        <button onClick={() => act('resume', 'resume', {})} disabled={busy !== ''} data-action="resume">{busy === 'resume' ? 'Resuming…' : 'Resume'}</button>
      )}
    </div>
  );
}

// Approvals shows, for a step held by the tool permissions before it runs,
// the tool, the rule that holds it and the input it would run with.
export function Approvals(props: { id: string; steps: string[]; confirms?: Record<string, Confirmation | undefined>; onDone: () => void }) {
  const [comment, setComment] = useState<Record<string, string>>({});
  const [busy, setBusy] = useState('');
  const [error, setError] = useState('');
  const decide = async (step: string, approve: boolean) => {
    setBusy(step);
    setError('');
    try {
      await post(`${wfPath(props.id)}/approve`, { approve, comment: comment[step] ?? '', step_id: step });
      props.onDone();
    } catch (e) {
      setError(message(e));
    } finally {
      setBusy('');
    }
  };
  return (
    <section class="card approval" aria-labelledby="h-approve" data-testid="approval">
      <div class="card-head"><h2 id="h-approve">Awaiting your approval</h2></div>
      {props.steps.map((s) => {
        const c = props.confirms?.[s];
        return (
          <div key={s}>
            <div class="approve-row">
              <label for={`c-${s}`}>Step <b class="mono">{s}</b></label>
              <input id={`c-${s}`} type="text" placeholder="Comment (optional)" value={comment[s] ?? ''} data-comment={s}
                onInput={(e) => setComment({ ...comment, [s]: (e.target as HTMLInputElement).value })} />
              <button class="primary" disabled={busy === s} onClick={() => decide(s, true)} data-action="approve" data-step={s}>{c ? 'Approve and run' : 'Approve'}</button>
              <button class="danger-outline" disabled={busy === s} onClick={() => decide(s, false)} data-action="reject" data-step={s}>Reject</button>
            </div>
            {c && <ConfirmDetail step={s} c={c} />}
          </div>
        );
      })}
      {error && <p class="error small" role="alert">{error}</p>}
    </section>
  );
}

// ConfirmDetail is what a held step would run: its tool, the rule holding
// it and its input, as indented JSON.
export function ConfirmDetail({ step, c }: { step: string; c: Confirmation }) {
  return (
    <div class="confirm" data-testid="confirm" data-step={step}>
      <p class="small">
        Runs <b class="mono" data-testid="confirm-capability">{c.capability}</b> only once confirmed, by the tool permission rule{' '}
        <code data-testid="confirm-rule">{c.rule}</code>
      </p>
      <figure class="json">
        <figcaption>Input it would run with</figcaption>
        <pre tabIndex={0} data-testid="confirm-input">{c.input === undefined || c.input === null ? 'no input' : JSON.stringify(c.input, null, 2)}</pre>
      </figure>
    </div>
  );
}

// waitingSignals lists the signals the workflow's wait steps wait for now.
export function waitingSignals(wf: WorkflowState): string[] {
  const out: string[] = [];
  for (const t of Object.values(wf.tasks ?? {})) {
    if (t.status === 'working' && t.wait?.signal && !out.includes(t.wait.signal)) out.push(t.wait.signal);
  }
  return out;
}

// Signals sends a signal, with a JSON body, to a wait step that waits for one.
export function Signals(props: { id: string; names: string[]; onDone: () => void }) {
  const [body, setBody] = useState<Record<string, string>>({});
  const [busy, setBusy] = useState('');
  const [error, setError] = useState('');
  const send = async (name: string) => {
    setBusy(name);
    setError('');
    try {
      const text = (body[name] ?? '').trim();
      const data = text === '' ? null : JSON.parse(text);
      await post(`${wfPath(props.id)}/signals/${encodeURIComponent(name)}`, data);
      props.onDone();
    } catch (e) {
      setError(e instanceof SyntaxError ? `not JSON: ${e.message}` : message(e));
    } finally {
      setBusy('');
    }
  };
  return (
    <section class="card approval" aria-labelledby="h-signal" data-testid="signals">
      <div class="card-head"><h2 id="h-signal">Waiting for a signal</h2></div>
      {props.names.map((n) => (
        <div class="approve-row" key={n}>
          <label for={`s-${n}`}>Signal <b class="mono">{n}</b></label>
          <input id={`s-${n}`} type="text" placeholder='JSON body, e.g. {"ok": true}' value={body[n] ?? ''} data-signal-body={n}
            onInput={(e) => setBody({ ...body, [n]: (e.target as HTMLInputElement).value })} />
          <button class="primary" disabled={busy === n} onClick={() => send(n)} data-action="signal" data-signal={n}>Send</button>
        </div>
      ))}
      {error && <p class="error small" role="alert">{error}</p>}
    </section>
  );
}
