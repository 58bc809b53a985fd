// Agents: per capability, its workers and the tenant's steps (queued by
// flow control, in flight, throttled); every registered instance with its
// load and health; both refreshed at the registry's heartbeat; and the
// semantic discovery box.
import { useEffect, useState } from 'preact/hooks';
import { get, type Capability, type CapabilitiesResponse, type Instance, type Match } from '../api';
import { flowState, flowTitle, queuedText, slotsText, waitText } from '../capabilities';
import { ago, ms } from '../format';

export function AgentsPage() {
  const [list, setList] = useState<Instance[] | null>(null);
  const [embedder, setEmbedder] = useState('');
  const [error, setError] = useState('');
  const [caps, setCaps] = useState<Capability[] | null>(null);
  const [capsError, setCapsError] = useState('');
  const [now, setNow] = useState(Date.now());
  const [query, setQuery] = useState('');
  const [matches, setMatches] = useState<Match[] | null>(null);
  const [asking, setAsking] = useState(false);

  useEffect(() => {
    let stop = false;
    const load = () => {
      get<{ instances: Instance[]; embedder: string }>('/v1/agents')
        .then((r) => {
          if (stop) return;
          setList(r.instances.sort((a, b) => a.name.localeCompare(b.name) || a.instance.localeCompare(b.instance)));
          setEmbedder(r.embedder);
          setError('');
          setNow(Date.now());
        })
        .catch((e) => !stop && setError(String(e.message ?? e)));
      // Apart, so that either one failing leaves the other shown.
      get<CapabilitiesResponse>('/v1/capabilities')
        .then((r) => {
          if (stop) return;
          setCaps(r.capabilities);
          setCapsError('');
        })
        .catch((e) => !stop && setCapsError(String(e.message ?? e)));
    };
    load();
    const t = setInterval(load, 2000);
    return () => {
      stop = true;
      clearInterval(t);
    };
  }, []);

  const ask = async (e: Event) => {
    e.preventDefault();
    if (!query.trim()) return;
    setAsking(true);
    try {
      const r = await get<{ matches: Match[] }>(`/v1/agents?query=${encodeURIComponent(query.trim())}&k=5`);
      setMatches(r.matches);
    } catch (err) {
      setError(String((err as Error).message ?? err));
    } finally {
      setAsking(false);
    }
  };
  const top = matches?.[0]?.score ?? 1;

  return (
    <div class="page">
      <div class="page-head">
        <h1>Agents</h1>
        <span class="muted small">{list ? `${list.length} instances` : ''}{embedder ? ` · embedder ${embedder}` : ''}</span>
      </div>
      <section class="card" aria-labelledby="h-disc">
        <div class="card-head"><h2 id="h-disc">Which agents would handle…</h2></div>
        <form class="discover" onSubmit={ask} role="search">
          <input type="search" value={query} placeholder="e.g. summarize what the documents say about retries" aria-label="Describe a task"
            onInput={(e) => setQuery((e.target as HTMLInputElement).value)} data-testid="discover" />
          <button class="primary" type="submit" disabled={asking || !query.trim()}>{asking ? 'Asking…' : 'Ask'}</button>
        </form>
        <div class="matches" aria-live="polite">
          {matches?.length === 0 && <p class="muted">No agent matches.</p>}
          {matches?.map((m, i) => (
            <div class="match" key={m.name} data-match={m.name}>
              <span class="rank">{i + 1}</span>
              <div class="m-body">
                <div><b>{m.name}</b> <span class="muted small">{m.capabilities.join(', ')}</span></div>
                <div class="muted small">{m.description}</div>
              </div>
              <div class="m-score">
                <span class="scorebar" aria-hidden="true"><span style={{ width: `${Math.max(4, (m.score / top) * 100)}%` }} /></span>
                <span class="mono small">{m.score.toFixed(3)}</span>
                <span class="small muted">{m.healthy}/{m.instances} healthy</span>
              </div>
            </div>
          ))}
        </div>
      </section>
      <section class="card table-card" aria-labelledby="h-caps">
        <div class="card-head">
          <h2 id="h-caps">Capabilities</h2>
          <span class="muted small">workers are shared by every tenant; the steps are your tenant's</span>
        </div>
        {capsError && <p class="error" role="alert">{capsError}</p>}
        <table class="list" data-testid="capabilities">
          <thead>
            <tr>
              <th>Capability</th><th class="num">Healthy</th><th class="num">Slots</th><th class="num">Queued</th>
              <th class="num">In flight</th><th class="num">Oldest queued</th><th>Flow</th>
            </tr>
          </thead>
          <tbody>
            {caps?.map((c) => {
              const state = flowState(c);
              return (
                <tr key={c.capability} data-capability={c.capability} data-flow={state}>
                  <td><span class="tag">{c.capability}</span></td>
                  <td class="num">{c.healthy}/{c.instances}</td>
                  <td class="num">{slotsText(c)}</td>
                  <td class="num" data-col="queued">{queuedText(c)}</td>
                  <td class="num" data-col="in_flight">{c.in_flight}</td>
                  <td class="num">{waitText(c)}</td>
                  <td><span class={`pill f-${state}`} title={flowTitle[state]}>{state}</span></td>
                </tr>
              );
            })}
            {caps?.length === 0 && <tr><td colSpan={7} class="empty">No capability: no agent is registered and no step of yours waits.</td></tr>}
            {!caps && !capsError && <tr><td colSpan={7} class="empty">Loading…</td></tr>}
          </tbody>
        </table>
      </section>
      {error && <p class="error" role="alert">{error}</p>}
      <div class="card table-card">
        <table class="list" data-testid="agents">
          <thead>
            <tr>
              <th>Agent</th><th>Capabilities</th><th>Health</th><th class="num">In flight</th><th class="num">Processed</th>
              <th class="num">Errors</th><th class="num">Avg</th><th>Instance</th><th>Heartbeat</th>
            </tr>
          </thead>
          <tbody>
            {list?.map((a) => (
              <tr key={a.instance} data-agent={a.name}>
                <td title={a.description}><b>{a.name}</b> <span class="muted small">{a.version}</span></td>
                <td>{a.capabilities.map((c) => <span class="tag" key={c}>{c}</span>)}</td>
                <td><span class={`pill h-${a.health}`}>{a.health}</span></td>
                <td class="num">{a.in_flight}</td>
                <td class="num">{a.processed}</td>
                <td class={`num ${a.errors ? 'error' : ''}`}>{a.errors}</td>
                <td class="num">{ms(a.avg_ms)}</td>
                <td class="mono small" title={a.instance}>{a.host}:{a.pid}</td>
                <td title={a.heartbeat_at}>{ago(a.heartbeat_at, now)}</td>
              </tr>
            ))}
            {list?.length === 0 && <tr><td colSpan={9} class="empty">No agent is registered: start `agentbus worker` or `agentbus serve`.</td></tr>}
            {!list && !error && <tr><td colSpan={9} class="empty">Loading…</td></tr>}
          </tbody>
        </table>
      </div>
    </div>
  );
}
