import type { ApiKey } from './api-keys.js';
import { inScope } from './api-keys.js';
import type { SandboxRecord } from './record-store.js';
import { notFoundError } from './sandbox-error.js';
import type { SandboxState } from './sandbox-state.js';
import { SINGULAR, type Resource } from '../../partner/resources.js';

export interface RouteContext {
  state: SandboxState;
  params: Record<string, string>;
  query: Record<string, unknown>;
  body: unknown;
  /** The key of the bearer token; undefined only on authenticate. */
  key: ApiKey | undefined;
  requestId: string;
}

export interface RouteResult {
  status: number;
  body: unknown;
}

/** One Partner API endpoint of the sandbox. */
export interface Route {
  method: 'GET' | 'POST';
  /** Path with `{name}` parameters, one segment each. */
  path: string;
  /** Whether a bearer token is required (all but authenticate, spec 4). */
  auth: boolean;
  /** A read-only key gets `403 forbidden` here (spec 5.8). */
  write: boolean;
  /** A state-changing write: recorded in the ledger. */
  ledger: boolean;
  /** Which rate limit counts it (spec 8). */
  bucket: 'default' | 'issue_token';
  handle(ctx: RouteContext): RouteResult | Promise<RouteResult>;
}

/**
 * The record behind an `{id}` parameter, if the key may see it; otherwise `404 not_found`
 * (spec 5.9: records outside a scoped key's owners or groups do not exist for it).
 */
export function visibleRecord(ctx: RouteContext, resource: Resource, param = 'id'): SandboxRecord {
  const raw = ctx.params[param] ?? '';
  const id = /^\d+$/.test(raw) ? Number(raw) : NaN;
  const record = Number.isSafeInteger(id) ? ctx.state.store.collection(resource).get(id) : undefined;
  if (!record || (ctx.key && !inScope(ctx.key, record))) throw notFoundError(SINGULAR[resource]);
  return record;
}

/** Owner and group a record created with a scoped key gets, so the key can see it. */
export function scopeFields(key: ApiKey | undefined): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  if (key?.owner_ids?.[0] !== undefined) fields.owner_id = key.owner_ids[0];
  if (key?.property_group_ids?.[0] !== undefined) fields.property_group_id = key.property_group_ids[0];
  return fields;
}
