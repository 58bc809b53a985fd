// Dark and light: the system's choice (prefers-color-scheme) unless the
// user picked one with the toggle, remembered in localStorage.
export type Theme = 'system' | 'light' | 'dark';
const key = 'agentbus.theme';

export function loadTheme(): Theme {
  const t = localStorage.getItem(key);
  return t === 'light' || t === 'dark' ? t : 'system';
}

export function applyTheme(t: Theme): void {
  if (t === 'system') {
    document.documentElement.removeAttribute('data-theme');
    localStorage.removeItem(key);
  } else {
    document.documentElement.setAttribute('data-theme', t);
    localStorage.setItem(key, t);
  }
}

export const nextTheme = (t: Theme): Theme => (t === 'system' ? 'light' : t === 'light' ? 'dark' : 'system');
