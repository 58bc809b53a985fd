// Whom the dashboard acts for, shared by the shell (app.tsx, which
// provides it) and the pages (which read it). It lives here, not in
// app.tsx, because app.tsx imports the pages: a page importing app.tsx
// back would close an import cycle (imports.test.ts forbids one).
import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { Whoami } from './api';

export interface Session {
  who: Whoami | null;
  /** reload asks the gateway again whom the token acts for. */
  reload: () => Promise<void>;
}

export const SessionContext = createContext<Session>({ who: null, reload: async () => {} });
export const useSession = () => useContext(SessionContext);
/** mayControl: show buttons that change state (not to viewers). */
export const useMayControl = () => useSession().who?.may_control === true;
