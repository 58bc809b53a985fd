// The shell: header with navigation, who the token acts for, the theme
// toggle and logout; the page the path names below it.
import { useCallback, useEffect, useState } from 'preact/hooks';
import { ApiError, get, type Whoami } from './api';
import { navigate, onLink, usePath } from './router';
import { clearToken, hasToken } from './session';
import { SessionContext } from './session_context';
import { applyTheme, loadTheme, nextTheme, type Theme } from './theme';
import { AgentsPage } from './pages/agents';
import { LoginPage } from './pages/login';
import { SchedulesPage } from './pages/schedules';
import { SubmitPage } from './pages/submit';
import { WorkflowPage } from './pages/workflow';
import { WorkflowsPage } from './pages/workflows';

export function App() {
  const path = usePath();
  const [who, setWho] = useState<Whoami | null>(null);
  const [needLogin, setNeedLogin] = useState(false);
  const [theme, setTheme] = useState<Theme>(loadTheme());

  const reload = useCallback(() =>
    get<Whoami>('/v1/whoami')
      .then((w) => {
        setWho(w);
        setNeedLogin(false);
      })
      .catch((e) => {
        setWho(null);
        setNeedLogin(e instanceof ApiError && e.status === 401);
      }), []);
  useEffect(() => {
    reload();
  }, [reload]);
  useEffect(() => {
    if (needLogin && path !== '/login') navigate('/login?next=' + encodeURIComponent(path), true);
  }, [needLogin, path]);

  const toggle = () => {
    const t = nextTheme(theme);
    applyTheme(t);
    setTheme(t);
  };
  const logout = () => {
    clearToken();
    setWho(null);
    setNeedLogin(true);
    navigate('/login');
  };

  let page;
  const m = /^\/workflows\/([^/]+)$/.exec(path);
  if (path === '/login') page = <LoginPage />;
  else if (!who) page = <div class="page"><p class="muted" aria-live="polite">{needLogin ? 'Sign in to continue.' : 'Connecting to the gateway…'}</p></div>;
  else if (m) page = <WorkflowPage key={m[1]} id={decodeURIComponent(m[1])} />;
  else if (path === '/agents') page = <AgentsPage />;
  else if (path === '/schedules') page = <SchedulesPage />;
  else if (path === '/submit') page = <SubmitPage />;
  else page = <WorkflowsPage />;

  const nav = (href: string, label: string, active: boolean) => (
    <a href={href} onClick={onLink} class={active ? 'active' : ''} aria-current={active ? 'page' : undefined}>{label}</a>
  );
  const themeLabel = theme === 'system' ? 'Theme: system' : theme === 'light' ? 'Theme: light' : 'Theme: dark';
  return (
    <SessionContext.Provider value={{ who, reload }}>
      <a class="skip" href="#main">Skip to content</a>
      <header class="top">
        <a class="brand" href="/" onClick={onLink}>
          <img src="/favicon.svg" alt="" width="22" height="22" />
          agentbus
        </a>
        <nav aria-label="Main">
          {nav('/', 'Workflows', path === '/' || path.startsWith('/workflows'))}
          {nav('/submit', 'Submit', path === '/submit')}
          {nav('/schedules', 'Schedules', path === '/schedules')}
          {nav('/agents', 'Agents', path === '/agents')}
        </nav>
        <div class="who">
          {who && (
            <span class="tenant" title={who.auth ? `token role: ${who.role}` : 'auth is off on this gateway'}>
              <span class="muted">tenant</span> <b data-testid="tenant">{who.tenant_id}</b>
              {who.auth && <span class={`role role-${who.role}`}>{who.role}</span>}
            </span>
          )}
          <button class="ghost icon" onClick={toggle} title={themeLabel} aria-label={themeLabel}>
            {theme === 'dark' ? '☾' : theme === 'light' ? '☀' : '◐'}
          </button>
          {(who?.auth || hasToken()) && <button class="ghost" onClick={logout}>Log out</button>}
        </div>
      </header>
      <main id="main" tabIndex={-1}>{page}</main>
    </SessionContext.Provider>
  );
}
