/**
 * Who may do what on the ops API (docs/ops-access.md). Roles are ordered: `viewer` reads
 * everything, `operator` also acts on dead letters and callbacks, `admin` also manages tokens.
 * Every route of /ops/api is in OPS_API_ROUTES with the least role it needs; a request no entry
 * matches needs `admin` (closed by default), and test/ops/ops-route-roles.test.ts checks that
 * every route the router serves has its entry.
 */

import { OPS_ROLES, type OpsRole } from '../config/ops-auth-config.js';

export { OPS_ROLES, type OpsRole };

export function isOpsRole(value: unknown): value is OpsRole {
  return (OPS_ROLES as readonly unknown[]).includes(value);
}

export function roleAllows(have: OpsRole, need: OpsRole): boolean {
  return OPS_ROLES.indexOf(have) >= OPS_ROLES.indexOf(need);
}

export interface RouteRole {
  method: 'GET' | 'POST' | 'DELETE';
  /** As mounted under /ops/api, with `:param` segments. */
  path: string;
  role: OpsRole;
}

export const OPS_API_ROUTES: readonly RouteRole[] = [
  { method: 'GET', path: '/session', role: 'viewer' },
  { method: 'GET', path: '/overview', role: 'viewer' },
  { method: 'GET', path: '/storage', role: 'viewer' },
  { method: 'GET', path: '/filters', role: 'viewer' },
  { method: 'GET', path: '/trace/:id', role: 'viewer' },
  { method: 'GET', path: '/dead-letters', role: 'viewer' },
  { method: 'GET', path: '/dead-letters/:id', role: 'viewer' },
  { method: 'POST', path: '/dead-letters/redrive', role: 'operator' },
  { method: 'POST', path: '/dead-letters/:id/redrive', role: 'operator' },
  { method: 'POST', path: '/dead-letters/:id/discard', role: 'operator' },
  { method: 'GET', path: '/audit', role: 'viewer' },
  { method: 'POST', path: '/reveal', role: 'operator' },
  { method: 'GET', path: '/callbacks', role: 'viewer' },
  { method: 'POST', path: '/callbacks/redeliver', role: 'operator' },
  { method: 'POST', path: '/callbacks/:source/enable', role: 'operator' },
  { method: 'GET', path: '/reconciliation/runs', role: 'viewer' },
  { method: 'GET', path: '/reconciliation/runs/:id', role: 'viewer' },
  { method: 'GET', path: '/tokens', role: 'admin' },
  { method: 'POST', path: '/tokens', role: 'admin' },
  { method: 'DELETE', path: '/tokens/:name', role: 'admin' },
  { method: 'POST', path: '/erasures', role: 'admin' },
];

function matcher(path: string): RegExp {
  const pattern = path
    .split('/')
    .map((seg) => (seg.startsWith(':') ? '[^/]+' : seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('/');
  return new RegExp(`^${pattern}/?$`);
}

const compiled = OPS_API_ROUTES.map((r) => ({ ...r, re: matcher(r.path) }));

/** The route entry a request matches (HEAD as GET); undefined: no such route (needs admin). */
export function routeFor(method: string, path: string): RouteRole | undefined {
  const m = method === 'HEAD' ? 'GET' : method;
  // A literal segment wins over a parameter (`/dead-letters/redrive` before `/:id/redrive`).
  return compiled.find((r) => r.method === m && r.re.test(path));
}
