/* global sessionStorage, fetch */
// The signed-in session: the bearer OPS_TOKEN and the actor's name, kept in this tab only
// (sessionStorage), and every call to /ops/api made with them.

const TOKEN_KEY = 'rentbridge.ops.token';
const ACTOR_KEY = 'rentbridge.ops.actor';
const signOutListeners = [];

export const signedIn = () => Boolean(sessionStorage.getItem(TOKEN_KEY));
export const actorName = () => sessionStorage.getItem(ACTOR_KEY) || '';

/** Keeps the token and name typed in; `forgetToken` drops the token again when it is refused. */
export function keepCredentials(token, actor) {
  sessionStorage.setItem(TOKEN_KEY, token);
  sessionStorage.setItem(ACTOR_KEY, actor);
}

export function forgetToken() {
  sessionStorage.removeItem(TOKEN_KEY);
}

/** Called with no arguments whenever the session ends (sign out, or a refused token). */
export function onSignOut(listener) {
  signOutListeners.push(listener);
}

export function signOut() {
  forgetToken();
  for (const listener of signOutListeners) listener();
}

/** The ops API answered that the token is missing or wrong. */
export const isRefused = (error) => error.status === 401 || error.status === 403;

export async function api(path, options = {}) {
  const headers = { Authorization: `Bearer ${sessionStorage.getItem(TOKEN_KEY) || ''}` };
  const actor = sessionStorage.getItem(ACTOR_KEY);
  if (actor) headers['X-Ops-Actor'] = actor;
  if (options.body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(`api/${path}`, {
    method: options.method || 'GET',
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const body = await res.json().catch(() => ({}));
  if (!res.ok) {
    const error = new Error(body.error ? body.error.message : `HTTP ${res.status}`);
    error.status = res.status;
    throw error;
  }
  return body;
}
