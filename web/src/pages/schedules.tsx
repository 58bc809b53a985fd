// Schedules: the tenant's schedules (GET /v1/schedules, refreshed every
// 3 s) with their timing, overlap policy, next and last fire and last run;
// a form that creates one (POST /v1/schedules), the API's problems shown
// at the fields their JSON pointers name; pause, unpause, trigger and
// delete. A viewer token sees the list only.
import { useEffect, useState } from 'preact/hooks';
import { ApiError, del, get, post, type Problem } from '../api';
import { useMayControl } from '../session_context';
import { ago } from '../format';
import { onLink } from '../router';
import { emptyForm, field, overlaps, runsHref, scheduleRequest, timing, until, type Form, type Schedule } from '../schedules';
import { wfHref } from '../components/family';

const schedPath = (id: string) => `/v1/schedules/${encodeURIComponent(id)}`;

function message(e: unknown): string {
  return e instanceof ApiError ? e.message : String((e as Error)?.message ?? e);
}

export function SchedulesPage() {
  const mayControl = useMayControl();
  const [list, setList] = useState<Schedule[] | null>(null);
  const [error, setError] = useState('');
  const [creating, setCreating] = useState(false);
  const [now, setNow] = useState(Date.now());
  const [reloads, setReloads] = useState(0);

  useEffect(() => {
    let alive = true;
    const load = () =>
      get<{ schedules: Schedule[] }>('/v1/schedules')
        .then((r) => {
          if (!alive) return;
          setList(r.schedules.sort((a, b) => a.schedule_id.localeCompare(b.schedule_id)));
          setError('');
          setNow(Date.now());
        })
        .catch((e) => alive && setError(message(e)));
    load();
    const t = setInterval(load, 3000);
    return () => {
      alive = false;
      clearInterval(t);
    };
  }, [reloads]);
  const reload = () => setReloads((n) => n + 1);

  return (
    <div class="page">
      <div class="page-head">
        <h1>Schedules</h1>
        <div class="spacer" />
        {mayControl && !creating && <button class="primary" onClick={() => setCreating(true)} data-action="new-schedule">New schedule</button>}
      </div>
      {creating && mayControl && <CreateForm onClose={() => setCreating(false)} onCreated={() => { setCreating(false); reload(); }} />}
      {!mayControl && <p class="muted small" data-testid="read-only">Your token is read-only (viewer): it may list schedules but not change them.</p>}
      {error && <p class="error" role="alert">{error}</p>}
      <div class="card table-card">
        <table class="list schedules" data-testid="schedules">
          <thead>
            <tr>
              <th class="c-id">Schedule</th>
              <th class="c-when">When</th>
              <th class="c-tz">Time zone</th>
              <th class="c-overlap">Overlap</th>
              <th class="c-state">State</th>
              <th class="c-time">Next fire</th>
              <th class="c-time">Last fire</th>
              <th>Last run</th>
              <th class="num c-runs">Runs</th>
              {mayControl && <th class="c-actions">Actions</th>}
            </tr>
          </thead>
          <tbody>
            {(list ?? []).map((s) => <Row key={s.schedule_id} s={s} now={now} mayControl={mayControl} onDone={reload} />)}
            {list && list.length === 0 && (
              <tr><td colSpan={10} class="empty">No schedules yet.{mayControl ? ' Create one to start a workflow on a cron expression or an interval.' : ''}</td></tr>
            )}
            {!list && !error && <tr><td colSpan={10} class="empty">Loading…</td></tr>}
          </tbody>
        </table>
      </div>
    </div>
  );
}

function Row({ s, now, mayControl, onDone }: { s: Schedule; now: number; mayControl: boolean; onDone: () => void }) {
  const [busy, setBusy] = useState('');
  const [confirm, setConfirm] = useState(false);
  const [note, setNote] = useState<{ error?: string; run?: string }>({});
  const act = async (what: string, run: () => Promise<unknown>) => {
    setBusy(what);
    setNote({});
    try {
      const r = await run();
      if (what === 'trigger') setNote({ run: (r as { workflow_id?: string })?.workflow_id });
      onDone();
    } catch (e) {
      setNote({ error: message(e) });
    } finally {
      setBusy('');
      setConfirm(false);
    }
  };
  const id = s.schedule_id;
  const last = s.state.last_workflow_id;
  return (
    <tr data-id={id} data-paused={String(s.paused)}>
      <td class="mono" title={s.note || s.workflow.query || ''}><b>{id}</b></td>
      <td class="mono" title={s.jitter ? `jitter ${s.jitter}` : undefined}>{timing(s)}{s.jitter ? <span class="muted small"> +≤{s.jitter}</span> : null}</td>
      <td>{s.every ? <span class="muted">—</span> : s.time_zone || 'UTC'}</td>
      <td class="mono small">{s.overlap}</td>
      <td>
        <span class={`pill ${s.paused ? 's-canceled' : 's-working'}`} data-testid="sched-state" data-state={s.paused ? 'paused' : 'active'}>{s.paused ? 'paused' : 'active'}</span>
        {s.state.buffered ? <span class="muted small" title={s.state.buffered}> · 1 buffered</span> : null}
      </td>
      <td title={s.next_fire_at}>{s.paused ? <span class="muted">paused</span> : until(s.next_fire_at, now)}</td>
      <td title={s.state.last_skip ? `last skip: ${s.state.last_skip}` : s.state.last_fire_at}>{ago(s.state.last_fire_at, now)}</td>
      <td class="mono" data-testid="last-run">{last ? <a href={wfHref(last)} onClick={onLink} title={last}>{last}</a> : <span class="muted">—</span>}</td>
      <td class="num" title={`${s.state.fires} fires · ${s.state.started} started · ${s.state.skipped} skipped · ${s.state.canceled} canceled`}>
        <a href={runsHref(id)} onClick={onLink} data-action="runs">{s.state.started}{s.state.skipped ? ` (+${s.state.skipped} skipped)` : ''}</a>
      </td>
      {mayControl && (
        <td class="c-actions">
          <div class="controls">
            {s.paused ? (
              <button class="small" disabled={busy !== ''} onClick={() => act('unpause', () => post(`${schedPath(id)}/unpause`, {}))} data-action="unpause">Unpause</button>
            ) : (
              <button class="small ghost" disabled={busy !== ''} onClick={() => act('pause', () => post(`${schedPath(id)}/pause`, {}))} data-action="pause">Pause</button>
            )}
            <button class="small" disabled={busy !== ''} onClick={() => act('trigger', () => post(`${schedPath(id)}/trigger`, {}))} data-action="trigger" title="Start a run now, under the overlap policy">
              {busy === 'trigger' ? 'Starting…' : 'Run now'}
            </button>
            {confirm ? (
              <>
                <button class="small danger" disabled={busy !== ''} onClick={() => act('delete', () => del(schedPath(id)))} data-action="confirm-delete" autoFocus>Delete</button>
                <button class="small ghost" onClick={() => setConfirm(false)}>Keep</button>
              </>
            ) : (
              <button class="small danger-outline" disabled={busy !== ''} onClick={() => setConfirm(true)} data-action="delete">Delete…</button>
            )}
          </div>
          {note.error && <div class="error small" role="alert">{note.error}</div>}
          {note.run && <div class="small" data-testid="triggered">started <a class="mono" href={wfHref(note.run)} onClick={onLink}>{note.run}</a></div>}
        </td>
      )}
    </tr>
  );
}

function CreateForm({ onClose, onCreated }: { onClose: () => void; onCreated: () => void }) {
  const [f, setF] = useState<Form>(emptyForm);
  const [problems, setProblems] = useState<Problem[]>([]);
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const set = <K extends keyof Form>(k: K, v: Form[K]) => setF({ ...f, [k]: v });
  const text = (k: keyof Form) => (e: Event) => set(k, (e.target as HTMLInputElement).value as never);

  const submit = async (e: Event) => {
    e.preventDefault();
    const r = scheduleRequest(f);
    setProblems(r.problems);
    setError('');
    if (!r.body) return;
    setBusy(true);
    try {
      await post('/v1/schedules', r.body);
      onCreated();
    } catch (err) {
      setError(message(err));
      setProblems(err instanceof ApiError ? err.problems : []);
    } finally {
      setBusy(false);
    }
  };
  // at shows the problems about one field beside it.
  const at = (k: keyof Form) => problems.filter((p) => field(p.pointer) === k).map((p) => (
    <span class="error small field-problem" data-pointer={p.pointer} key={p.pointer + p.message}>{p.message}</span>
  ));
  const rest = problems.filter((p) => field(p.pointer) === 'form');
  return (
    <form class="card sched-form" onSubmit={submit} data-testid="schedule-form" aria-labelledby="h-new-sched">
      <div class="card-head"><h2 id="h-new-sched">New schedule</h2></div>
      <div class="grid2">
        <div>
          <label for="s-id">Schedule id</label>
          <input id="s-id" class="mono" value={f.id} placeholder="nightly-digest" onInput={text('id')} data-field="id" required />
          {at('id')}
        </div>
        <div>
          <label for="s-overlap">Overlap (while the previous run has not ended)</label>
          <select id="s-overlap" value={f.overlap} onChange={(e) => set('overlap', (e.target as HTMLSelectElement).value as Form['overlap'])} data-field="overlap">
            {overlaps.map(([v, l]) => <option value={v} key={v}>{l}</option>)}
          </select>
          {at('overlap')}
        </div>
        <div>
          <span class="label">Fires</span>
          <div class="row">
            <label class="inline"><input type="radio" name="timing" checked={f.timing === 'cron'} onChange={() => set('timing', 'cron')} data-field="timing-cron" /> on a cron expression</label>
            <label class="inline"><input type="radio" name="timing" checked={f.timing === 'every'} onChange={() => set('timing', 'every')} data-field="timing-every" /> every interval</label>
          </div>
          {f.timing === 'cron' ? (
            <>
              <input class="mono" value={f.cron} placeholder="0 8 * * mon-fri  or  @hourly" onInput={text('cron')} aria-label="Cron expression" data-field="cron" />
              {at('cron')}
            </>
          ) : (
            <>
              <input class="mono" value={f.every} placeholder="30s, 5m, 1h30m" onInput={text('every')} aria-label="Interval" data-field="every" />
              {at('every')}
            </>
          )}
        </div>
        <div>
          <label for="s-tz">Time zone {f.timing === 'every' && <span class="muted">(cron only)</span>}</label>
          <input id="s-tz" value={f.timeZone} placeholder="UTC, Europe/Paris" onInput={text('timeZone')} disabled={f.timing === 'every'} data-field="time_zone" />
          {at('timeZone')}
          <label for="s-jitter" class="gap">Jitter <span class="muted">(optional)</span></label>
          <input id="s-jitter" class="mono" value={f.jitter} placeholder="30s" onInput={text('jitter')} data-field="jitter" />
          {at('jitter')}
          <label for="s-catchup" class="gap" title="slots no server fired (all down past them) are still started when the schedule fires again, this far back">
            Catch-up window <span class="muted">(optional)</span>
          </label>
          <input id="s-catchup" class="mono" value={f.catchup} placeholder="1h" onInput={text('catchup')} data-field="catchup_window" />
          {at('catchup')}
        </div>
      </div>
      <div class="tabs" role="tablist">
        <button type="button" role="tab" aria-selected={f.what === 'query'} class={f.what === 'query' ? 'on' : ''} onClick={() => set('what', 'query')} data-tab="query">Query</button>
        <button type="button" role="tab" aria-selected={f.what === 'plan'} class={f.what === 'plan' ? 'on' : ''} onClick={() => set('what', 'plan')} data-tab="plan">Plan (JSON)</button>
      </div>
      {f.what === 'query' ? (
        <textarea rows={2} value={f.query} placeholder="summarise yesterday's incidents" onInput={text('query')} aria-label="Query" data-field="query" />
      ) : (
        <textarea class="editor mono" rows={8} spellcheck={false} value={f.plan} onInput={text('plan')} aria-label="Plan" data-field="plan" />
      )}
      {at(f.what === 'query' ? 'query' : 'plan')}
      <div class="row">
        <label class="inline"><input type="checkbox" checked={f.paused} onChange={(e) => set('paused', (e.target as HTMLInputElement).checked)} data-field="paused" /> start paused</label>
        <span class="spacer" />
        <button type="button" class="ghost" onClick={onClose}>Close</button>
        <button class="primary" type="submit" disabled={busy} data-action="create-schedule">{busy ? 'Creating…' : 'Create schedule'}</button>
      </div>
      {(error || rest.length > 0) && (
        <ul class="problems" role="alert" data-testid="schedule-problems">
          {error && <li class="error">{error}</li>}
          {rest.map((p) => <li key={p.pointer + p.message} class="error" data-pointer={p.pointer}><code>{p.pointer || p.name || '/'}</code> {p.message}</li>)}
        </ul>
      )}
    </form>
  );
}
