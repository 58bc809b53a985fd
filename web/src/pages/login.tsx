import { useState } from 'preact/hooks';
import { ApiError, get, type Whoami } from '../api';
import { navigate } from '../router';
import { clearToken, setToken } from '../session';
import { useSession } from '../session_context';

// Login stores a tenant token in the agentbus_token cookie, after the
// gateway confirmed it.
export function LoginPage() {
  const { who, reload } = useSession();
  const [token, setTok] = useState('');
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);

  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError('');
    setToken(token.trim());
    try {
      await get<Whoami>('/v1/whoami');
      // the shell must know before the page changes, or it sends us back here
      await reload();
      const next = new URLSearchParams(location.search).get('next');
      navigate(next && next.startsWith('/') && !next.startsWith('//') ? next : '/');
    } catch (err) {
      clearToken();
      setError(err instanceof ApiError && err.status === 401 ? 'The gateway does not know this token.' : String(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <div class="page narrow">
      <div class="card login">
        <h1>Sign in</h1>
        {who && !who.auth ? (
          <p class="muted">This gateway runs with auth off: every request acts for tenant <b>{who.tenant_id}</b>, no token needed.</p>
        ) : (
          <p class="muted">Paste a tenant token. It is kept in a cookie for this gateway only (SameSite=Strict) and names your tenant and role.</p>
        )}
        <form onSubmit={submit}>
          <label for="token">Token</label>
          <input id="token" name="token" type="password" autoComplete="current-password" value={token} required
            onInput={(e) => setTok((e.target as HTMLInputElement).value)} aria-invalid={error ? 'true' : undefined} aria-describedby="login-error" />
          <p id="login-error" class="error" role="alert">{error}</p>
          <button class="primary" type="submit" disabled={busy || token.trim() === ''}>{busy ? 'Checking…' : 'Sign in'}</button>
        </form>
      </div>
    </div>
  );
}
