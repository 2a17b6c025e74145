/* global sessionStorage, fetch */
// Who is signed in, and every call to /ops/api. Two ways in: single sign-on (an HttpOnly session
// cookie this script never sees, plus the anti-forgery token GET api/session hands out, sent back
// on every state-changing call), or a bearer token (a personal token or the break-glass OPS_TOKEN)
// kept in this tab only (sessionStorage). The audit's "who" is decided by the server, not here.

const TOKEN_KEY = 'rentbridge.ops.token';
const signOutListeners = [];
let me = null;

/** The signed-in identity (GET api/session): name, role, kind, allowed routes; null when none. */
export const whoAmI = () => me;
export const signedIn = () => me !== null;

export function keepToken(token) {
  sessionStorage.setItem(TOKEN_KEY, token);
}

export function forgetToken() {
  sessionStorage.removeItem(TOKEN_KEY);
}

/** Asks the server who this is (cookie or stored token); null when nobody is signed in. */
export async function loadSession() {
  try {
    const session = await api('session');
    me = session.signed_in ? session : null;
  } catch {
    me = null;
  }
  return me;
}

/** Called with no arguments whenever the session ends (sign out, or a refused credential). */
export function onSignOut(listener) {
  signOutListeners.push(listener);
}

export async function signOut() {
  const csrf = me && me.csrf_token;
  me = null;
  forgetToken();
  if (csrf) {
    await fetch('auth/logout', { method: 'POST', headers: { 'X-CSRF-Token': csrf } }).catch(() => undefined);
  }
  for (const listener of signOutListeners) listener();
}

/** The credential is missing, ended or wrong (not: this role may not do that). */
export const isRefused = (error) => error.status === 401 || (error.status === 403 && !error.roleNeeded);

export async function api(path, options = {}) {
  const headers = {};
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) headers.Authorization = `Bearer ${token}`;
  if (me && me.csrf_token) headers['X-CSRF-Token'] = me.csrf_token;
  if (options.body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(`api/${path}`, {
    method: options.method || 'GET',
    headers,
    credentials: 'same-origin',
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const body = await res.json().catch(() => ({}));
  if (!res.ok) {
    const error = new Error(body.error ? body.error.message : `HTTP ${res.status}`);
    error.status = res.status;
    error.roleNeeded = body.error ? body.error.role_needed : undefined;
    throw error;
  }
  return body;
}

/** May the signed-in role call this route (`POST /dead-letters/:id/redrive`)? */
export const allowed = (route) => Boolean(me && me.allowed.includes(route));
