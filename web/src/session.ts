// The tenant token, kept in the cookie the gateway reads (agentbus_token):
// Path=/ so every API call carries it, SameSite=Strict so no other site's
// request does. It cannot be HttpOnly (the page sets it), which is why the
// Content-Security-Policy forbids every script but the page's own.
export const tokenCookie = 'agentbus_token';

export function setToken(token: string, days = 30): void {
  const secure = location.protocol === 'https:' ? '; Secure' : '';
  document.cookie = `${tokenCookie}=${encodeURIComponent(token)}; Path=/; Max-Age=${days * 86400}; SameSite=Strict${secure}`;
}

export function clearToken(): void {
  document.cookie = `${tokenCookie}=; Path=/; Max-Age=0; SameSite=Strict`;
}

export function hasToken(): boolean {
  return document.cookie.split(/;\s*/).some((c) => c.startsWith(tokenCookie + '=') && c.length > tokenCookie.length + 1);
}
