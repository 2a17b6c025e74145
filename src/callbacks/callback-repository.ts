import { Prisma } from '@prisma/client';
import type { Db } from '../db/prisma.js';

/**
 * The callback tables (prisma/migrations/20261125360000_outcome_callbacks): deliveries, their
 * attempts, and each source's endpoint state. Plain objects out; ids as strings.
 */

export type DeliveryState = 'pending' | 'delivered' | 'dead';

export interface NewDelivery {
  source: string;
  webhookId: string;
  eventId: string;
  eventType: string;
  commandType: string;
  commandId: string;
  outcomeStatus: string;
  payload: string;
}

export interface Delivery extends NewDelivery {
  id: string;
  state: DeliveryState;
  attempts: number;
  failures: number;
  nextAttemptAt: Date;
  retryFrom: Date;
  createdAt: Date;
  deliveredAt: Date | null;
  deadAt: Date | null;
  lastStatus: number | null;
  lastError: string | null;
}

interface DeliveryRow {
  id: bigint;
  source: string;
  webhook_id: string;
  event_id: string;
  event_type: string;
  command_type: string;
  command_id: string;
  outcome_status: string;
  payload: string;
  state: DeliveryState;
  attempts: number;
  failures: number;
  next_attempt_at: Date;
  retry_from: Date;
  created_at: Date;
  delivered_at: Date | null;
  dead_at: Date | null;
  last_status: number | null;
  last_error: string | null;
}

function toDelivery(r: DeliveryRow): Delivery {
  return {
    id: String(r.id),
    source: r.source,
    webhookId: r.webhook_id,
    eventId: r.event_id,
    eventType: r.event_type,
    commandType: r.command_type,
    commandId: r.command_id,
    outcomeStatus: r.outcome_status,
    payload: r.payload,
    state: r.state,
    attempts: r.attempts,
    failures: r.failures,
    nextAttemptAt: r.next_attempt_at,
    retryFrom: r.retry_from,
    createdAt: r.created_at,
    deliveredAt: r.delivered_at,
    deadAt: r.dead_at,
    lastStatus: r.last_status,
    lastError: r.last_error,
  };
}

/** Inserts the deliveries not there yet (one per source and webhook-id); returns the new ones. */
export async function insertDeliveries(db: Db, rows: readonly NewDelivery[]): Promise<NewDelivery[]> {
  if (rows.length === 0) return [];
  const inserted = await db.$queryRaw<Array<{ source: string; webhook_id: string }>>`
    INSERT INTO callback_deliveries
      (source, webhook_id, event_id, event_type, command_type, command_id, outcome_status, payload)
    SELECT * FROM unnest(
      ${rows.map((r) => r.source)}::text[], ${rows.map((r) => r.webhookId)}::text[],
      ${rows.map((r) => r.eventId)}::text[], ${rows.map((r) => r.eventType)}::text[],
      ${rows.map((r) => r.commandType)}::text[], ${rows.map((r) => r.commandId)}::text[],
      ${rows.map((r) => r.outcomeStatus)}::text[], ${rows.map((r) => r.payload)}::text[])
    ON CONFLICT (source, webhook_id) DO NOTHING
    RETURNING source, webhook_id`;
  const keys = new Set(inserted.map((r) => `${r.source}\n${r.webhook_id}`));
  return rows.filter((r) => keys.has(`${r.source}\n${r.webhookId}`));
}

/**
 * Takes up to `limit` of a source's due deliveries, oldest first, and leases them for `leaseMs`
 * (their next attempt moved past the lease): another process skips them meanwhile, and if this
 * one dies mid-attempt they are due again when the lease ends (at least once).
 */
export async function claimDue(db: Db, source: string, limit: number, leaseMs: number): Promise<Delivery[]> {
  if (limit <= 0) return [];
  const rows = await db.$queryRaw<DeliveryRow[]>`
    UPDATE callback_deliveries d
       SET next_attempt_at = now() + make_interval(secs => ${leaseMs / 1000}::float8)
      FROM (SELECT id FROM callback_deliveries
             WHERE source = ${source} AND state = 'pending' AND next_attempt_at <= now()
             ORDER BY next_attempt_at, id
             LIMIT ${limit}
             FOR UPDATE SKIP LOCKED) due
     WHERE d.id = due.id
    RETURNING d.*`;
  return rows.map(toDelivery).sort((a, b) => Number(BigInt(a.id) - BigInt(b.id)));
}

/** A delivery taken but not attempted (the endpoint was disabled meanwhile): due again now. */
export async function release(db: Db, ids: readonly string[]): Promise<void> {
  if (ids.length === 0) return;
  await db.$executeRaw`
    UPDATE callback_deliveries SET next_attempt_at = now()
     WHERE id = ANY(${ids.map(BigInt)}::bigint[]) AND state = 'pending'`;
}

export interface EndpointState {
  source: string;
  breaker: string;
  consecutiveFailures: number;
  disabledUrl: string | null;
  disabledAt: Date | null;
  updatedAt: Date;
}

export async function endpointStates(db: Db): Promise<EndpointState[]> {
  const rows = await db.$queryRaw<
    Array<{
      source: string;
      breaker: string;
      consecutive_failures: number;
      disabled_url: string | null;
      disabled_at: Date | null;
      updated_at: Date;
    }>
  >`SELECT * FROM callback_endpoints ORDER BY source`;
  return rows.map((r) => ({
    source: r.source,
    breaker: r.breaker,
    consecutiveFailures: r.consecutive_failures,
    disabledUrl: r.disabled_url,
    disabledAt: r.disabled_at,
    updatedAt: r.updated_at,
  }));
}

/** The breaker's state as this process sees it, for the console and the CLI. */
export async function saveBreaker(db: Db, source: string, breaker: string, failures: number): Promise<void> {
  await db.$executeRaw`
    INSERT INTO callback_endpoints (source, breaker, consecutive_failures, updated_at)
    VALUES (${source}, ${breaker}, ${failures}, now())
    ON CONFLICT (source) DO UPDATE
      SET breaker = EXCLUDED.breaker, consecutive_failures = EXCLUDED.consecutive_failures, updated_at = now()`;
}

/** A 410 from `url`: the endpoint is disabled while the source's configured URL is this one. */
export async function disableEndpoint(db: Db, source: string, url: string): Promise<void> {
  await db.$executeRaw`
    INSERT INTO callback_endpoints (source, disabled_url, disabled_at, updated_at)
    VALUES (${source}, ${url}, now(), now())
    ON CONFLICT (source) DO UPDATE SET disabled_url = ${url}, disabled_at = now(), updated_at = now()`;
}

/** Enables a disabled endpoint again (`rentbridge callbacks enable`); true when it was disabled. */
export async function enableEndpoint(db: Db, source: string): Promise<boolean> {
  const n = await db.$executeRaw`
    UPDATE callback_endpoints SET disabled_url = NULL, disabled_at = NULL, updated_at = now()
     WHERE source = ${source} AND disabled_url IS NOT NULL`;
  return n > 0;
}

export interface SourceQueue {
  source: string;
  pending: number;
  dead: number;
  /**
   * Delivered in the last 24 hours: a count over every delivery ever made read the whole table on
   * each console refresh (issue 42), and delivered callbacks are pruned after CALLBACK_RETENTION_DAYS.
   */
  delivered: number;
  /** Seconds since the oldest pending delivery's outcome arrived; 0 when none waits. */
  oldestPendingSeconds: number;
}

export async function queueBySource(db: Db): Promise<SourceQueue[]> {
  const rows = await db.$queryRaw<
    Array<{ source: string; pending: bigint; dead: bigint; delivered: bigint; oldest: number | null }>
  >`
    WITH waiting AS (
      SELECT source,
             count(*) FILTER (WHERE state = 'pending') AS pending,
             count(*) FILTER (WHERE state = 'dead') AS dead,
             min(created_at) FILTER (WHERE state = 'pending') AS oldest
        FROM callback_deliveries WHERE state IN ('pending', 'dead') GROUP BY source),
    delivered AS (
      SELECT source, count(*) AS delivered FROM callback_deliveries
       WHERE state = 'delivered' AND delivered_at > now() - interval '1 day' GROUP BY source)
    SELECT source, coalesce(w.pending, 0) AS pending, coalesce(w.dead, 0) AS dead,
           coalesce(d.delivered, 0) AS delivered,
           EXTRACT(EPOCH FROM now() - w.oldest)::float8 AS oldest
      FROM waiting w FULL JOIN delivered d USING (source) ORDER BY source`;
  return rows.map((r) => ({
    source: r.source,
    pending: Number(r.pending),
    dead: Number(r.dead),
    delivered: Number(r.delivered),
    oldestPendingSeconds: r.oldest ?? 0,
  }));
}

export interface DeliveryFilter {
  state?: DeliveryState;
  source?: string;
  /** With source and commandType, one command's deliveries (a command is its identity). */
  commandId?: string;
  commandType?: string;
  ids?: readonly string[];
  limit?: number;
}

function where(filter: DeliveryFilter): Prisma.Sql {
  const parts: Prisma.Sql[] = [Prisma.sql`TRUE`];
  if (filter.state) parts.push(Prisma.sql`state = ${filter.state}`);
  if (filter.source) parts.push(Prisma.sql`source = ${filter.source}`);
  if (filter.commandId !== undefined) parts.push(Prisma.sql`command_id = ${filter.commandId}`);
  if (filter.commandType !== undefined) parts.push(Prisma.sql`command_type = ${filter.commandType}`);
  if (filter.ids) parts.push(Prisma.sql`id = ANY(${filter.ids.map(BigInt)}::bigint[])`);
  return Prisma.join(parts, ' AND ');
}

export async function listDeliveries(db: Db, filter: DeliveryFilter = {}): Promise<Delivery[]> {
  const rows = await db.$queryRaw<DeliveryRow[]>`
    SELECT * FROM callback_deliveries WHERE ${where(filter)}
     ORDER BY id DESC LIMIT ${filter.limit ?? 100}`;
  return rows.map(toDelivery);
}

export interface AttemptRow {
  at: Date;
  url: string;
  result: string;
  httpStatus: number | null;
  durationMs: number;
  error: string | null;
}

export async function attemptsOf(db: Db, deliveryId: string): Promise<AttemptRow[]> {
  const rows = await db.$queryRaw<
    Array<{
      at: Date;
      url: string;
      result: string;
      http_status: number | null;
      duration_ms: number;
      error: string | null;
    }>
  >`SELECT at, url, result, http_status, duration_ms, error FROM callback_attempts
     WHERE delivery_id = ${BigInt(deliveryId)} ORDER BY at, id`;
  return rows.map((r) => ({
    at: r.at,
    url: r.url,
    result: r.result,
    httpStatus: r.http_status,
    durationMs: r.duration_ms,
    error: r.error,
  }));
}

/**
 * Redelivers dead deliveries (the ones given, or every dead one of the filter): pending again,
 * due now, with a fresh retry span. The same webhook-id, so a PMS that did get it dedupes.
 * Returns the ids redelivered.
 */
export async function redeliver(db: Db, filter: Omit<DeliveryFilter, 'state'>): Promise<string[]> {
  const rows = await db.$queryRaw<Array<{ id: bigint }>>`
    UPDATE callback_deliveries
       SET state = 'pending', failures = 0, next_attempt_at = now(), retry_from = now(), dead_at = NULL
     WHERE state = 'dead' AND ${where(filter)}
    RETURNING id`;
  return rows.map((r) => String(r.id));
}
