import { POLLER_STALE_SECONDS } from './pass-staleness.js';
import type { Db } from '../db/prisma.js';
import { type Logger, logSummary } from '../logger.js';
import { metrics } from '../metrics.js';
import type { Resource } from '../partner/resources.js';
import { COLLECTION_RULES, utcDate } from './collections.js';
import type { ListQuery, PagedResource } from '../partner/index.js';
import type { PartnerRecord, PollerPartner } from './partner-port.js';
import {
  databaseNow,
  knownCustomerIds,
  markFailed,
  markPage,
  markStarted,
  markSucceeded,
  readFromDate,
  writePage,
  writeRemovals,
  type PassStats,
} from './poller-repository.js';
import { withVersion } from './record-version.js';
import type { RequestCounter } from './request-counter.js';

/** Largest page the API serves (spec 4.5): the fewest requests per record. */
export const PER_PAGE = 1000;

export interface PollerHooks {
  /** Called after each page's changes are committed, before the next page is asked for (tests). */
  afterPage?(info: { resource: Resource; page: number }): void | Promise<void>;
}

/** The pass under way: pages read so far (0 at its start) and the pages it will read when known (else 0). */
export interface PassProgress {
  resource: Resource;
  pages: number;
  pageCount: number;
  at: Date;
}

export interface PassContext {
  partner: PollerPartner;
  db: Db;
  logger: Logger;
  resource: Resource;
  /** First pass of a date-filtered collection: read from this date, or everything when null. */
  backfillFrom: string | null;
  progressEveryPages: number;
  /** When the resource's last success is too old (src/poller/pass-staleness.ts; default 900 s), kept with the pass. */
  staleAfterSeconds?: number;
  /** Records per page asked for; 1000 (the maximum) unless a test wants short pages. */
  perPage: number;
  now: () => Date;
  hooks: PollerHooks;
  /** Counts the requests really sent (boundary re-reads included); without it, pages received. */
  requestCounter?: RequestCounter;
  /** Checked between pages: a stopping poller leaves the pass unfinished and its cursor unmoved. */
  isStopping: () => boolean;
  /** Aborted when the poller stops: the request in flight (or waiting for its budget slot) ends now. */
  signal?: AbortSignal;
  /** At the pass's start and after each page, once the page's progress is in poller_cursors (/readyz). */
  onProgress?: (progress: PassProgress) => void;
  /**
   * Where the pages of the collections the guard snapshots go, for its next snapshots (issue 43,
   * src/guard/read-backs/snapshot-store.ts): `askedAt` is no later than the page was asked for.
   */
  snapshots?: PageSink;
}

/** The part of the guard's snapshot store the poller feeds. */
export interface PageSink {
  savePage(
    resource: string,
    items: ReadonlyArray<Record<string, unknown>>,
    askedAt: number,
    position?: { page: number; perPage: number },
  ): Promise<void>;
}

/** Collections whose records the guard snapshots (payments: enrollments; decisions: applications). */
const SNAPSHOTTED: ReadonlySet<string> = new Set(['enrollments', 'applications']);

export class PassStoppedError extends Error {
  override name = 'PassStoppedError';
}

const STOPPED = 'poller stopping: pass left unfinished';

/** Options of the poller's calls: the low-priority lane, and the poller's stop. */
const pollCall = (ctx: PassContext) => ({ lane: 'poll' as const, ...(ctx.signal && { signal: ctx.signal }) });

type Versioned = PartnerRecord & { id: string; updated_at: string };

/** What a pass does after each request, each batch of records and each page. */
interface PassSteps {
  requestMade: () => void;
  write: (records: Versioned[]) => Promise<void>;
  pageDone: () => Promise<void>;
  /** An info line with the pass's figures, its elapsed time measured now. */
  progress: (message: string) => void;
}

/**
 * One pass over one collection by its rule (spec 4.7). Each page is written in its own
 * transaction; the cursor moves to the day the pass started only after every page (and, for full
 * reads, the removals) is committed. A pass that fails or is stopped keeps the old cursor, and the
 * next one re-reads from there: the shared dedupe makes the re-read publish nothing twice.
 */
export async function runResourcePass(ctx: PassContext): Promise<PassStats> {
  const { db, resource, logger } = ctx;
  const startedAt = ctx.now();
  const clock = Date.now();
  const rule = COLLECTION_RULES[resource];
  const source = `/poller/${resource}`;
  const stats: PassStats = {
    pages: 0,
    pageCount: 0,
    records: 0,
    changes: 0,
    removed: 0,
    requests: 0,
    elapsedMs: 0,
  };
  const counter = ctx.requestCounter;
  const countedBefore = counter?.count(resource) ?? 0;
  let received = 0;
  // Requests used so far: as the counter saw them, or the pages received when there is none.
  const syncRequests = () => {
    const now = counter ? counter.count(resource) - countedBefore : received;
    metrics.pollerRequests.inc({ resource }, Math.max(0, now - stats.requests));
    stats.requests = now;
  };
  const requestMade = () => {
    received += 1;
    syncRequests();
  };
  const write = async (records: Versioned[]) => {
    const changes = await writePage(db, resource, records, source);
    stats.changes += changes;
    metrics.pollerChanges.inc({ resource }, changes);
  };
  const progress = (message: string) => {
    stats.elapsedMs = Date.now() - clock;
    logger.info({ resource, ...stats }, message);
  };
  // The pass under way moves: poller_cursors (the overview), the gauge (the alert), /readyz.
  const pageDone = async () => {
    const at = ctx.now();
    await markPage(db, resource, { pages: stats.pages, pageCount: stats.pageCount, at });
    metrics.pollerPassProgress.set({ resource }, Date.now() / 1000);
    ctx.onProgress?.({ resource, pages: stats.pages, pageCount: stats.pageCount, at });
  };
  const readPages = async (query: Record<string, string | number>, seen?: Set<string>) => {
    // The client's walk is drift-safe: a delete while paging makes it re-read the boundary (a
    // re-read that finds something new is yielded as a page), and repeats are left out.
    const walk = ctx.partner.pages(resource as PagedResource, query as ListQuery, pollCall(ctx));
    // Before the next page is asked for: a lower bound of when it was.
    let askedAt = Date.now();
    for await (const page of walk) {
      requestMade();
      await keepForSnapshots(ctx, query, page.data, askedAt);
      stats.pages += 1;
      if (stats.pageCount === 0) stats.pageCount = page.data.page_count;
      stats.records += page.data.items.length;
      const records = page.data.items.map((item) => withVersion(item, resource));
      for (const r of records) seen?.add(r.id);
      await write(records);
      await pageDone();
      if (stats.pages % ctx.progressEveryPages === 0) progress('poller pass progress');
      await ctx.hooks.afterPage?.({ resource, page: stats.pages });
      if (ctx.isStopping()) throw new PassStoppedError(STOPPED);
      askedAt = Date.now();
    }
  };

  await markStarted(db, resource, startedAt, ctx.staleAfterSeconds ?? POLLER_STALE_SECONDS);
  ctx.onProgress?.({ resource, pages: 0, pageCount: 0, at: startedAt });
  // Removal detection compares with known_records.seen_at, which the database's clock writes.
  const removalCutoff = await databaseNow(db);
  try {
    if (rule.kind === 'dated') {
      const fromDate = (await readFromDate(db, resource)) ?? ctx.backfillFrom;
      stats.fromDate = fromDate;
      await readPages({ per_page: ctx.perPage, ...(fromDate ? { [rule.fromKey]: fromDate } : {}) });
    } else if (rule.kind === 'full') {
      const seen = new Set<string>();
      await readPages({ per_page: ctx.perPage }, seen);
      stats.removed = await writeRemovals(db, resource, seen, removalCutoff, source);
    } else if (rule.kind === 'bank_accounts') {
      const response = await ctx.partner.bankAccounts(pollCall(ctx));
      requestMade();
      stats.pages = stats.pageCount = 1;
      stats.records = response.data.length;
      const records = response.data.map((item) => withVersion(item, resource));
      await write(records);
      await pageDone();
      stats.removed = await writeRemovals(
        db,
        resource,
        new Set(records.map((r) => r.id)),
        removalCutoff,
        source,
      );
    } else {
      await pollCustomerIssues(ctx, stats, { requestMade, write, pageDone, progress }, removalCutoff, source);
    }
    syncRequests();
    stats.elapsedMs = Date.now() - clock;
    await markSucceeded(db, resource, { fromDate: utcDate(startedAt), at: ctx.now(), stats });
    metrics.pollerLastSuccess.set({ resource }, Date.now() / 1000);
    metrics.pollerPassProgress.set({ resource }, 0);
    // Each pass at debug; the passes that found something, counted in one info line a minute
    // (issue 41: one line a pass scrolled npm start's banner away under the demo's traffic).
    logger.debug({ resource, ...stats }, 'poller pass completed');
    if (stats.changes > 0 || stats.removed > 0)
      logSummary(logger, 'poller passes that found changes (count by resource)').add(
        resource,
        {},
        { changes: stats.changes, removed: stats.removed },
      );
    return stats;
  } catch (thrown) {
    syncRequests();
    stats.elapsedMs = Date.now() - clock;
    // A call cut short by the poller's stop is a stopped pass, not a failed one.
    const error = ctx.signal?.aborted ? new PassStoppedError(STOPPED, { cause: thrown }) : thrown;
    const message = error instanceof Error ? error.message : String(error);
    await markFailed(db, resource, { at: ctx.now(), error: message, stats }).catch((e: unknown) =>
      logger.error({ resource, err: e }, 'could not record the failed pass'),
    );
    metrics.pollerPassProgress.set({ resource }, 0);
    throw error;
  }
}

/**
 * Issues of every known customer (ids from known_records of `customers`, so customers are polled
 * first). An issue keeps its own id; one without an id gets a content hash scoped to its customer,
 * and one without `updated_at` a content-hash version (see record-version.ts); `customer_id` is added. Written in batches of about a page.
 */
async function pollCustomerIssues(
  ctx: PassContext,
  stats: PassStats,
  { requestMade, write, pageDone, progress }: PassSteps,
  removalCutoff: Date,
  source: string,
): Promise<void> {
  const customers = await knownCustomerIds(ctx.db);
  stats.pageCount = customers.length;
  const seen = new Set<string>();
  let batch: Versioned[] = [];
  for (const customerId of customers) {
    const issues = await customerIssues(ctx, customerId);
    requestMade();
    stats.pages += 1;
    for (const issue of issues) {
      const keyed = withVersion({ customer_id: customerId, ...issue }, `customer:${customerId}`);
      seen.add(keyed.id);
      batch.push(keyed);
      stats.records += 1;
    }
    if (batch.length >= ctx.perPage) {
      await write(batch);
      batch = [];
    }
    await pageDone();
    // A request per customer: progress every ten times as many requests as for list pages.
    // Through the pass's own progress line: its elapsedMs measured, never the 0 it started with.
    if (stats.pages % (ctx.progressEveryPages * 10) === 0) progress('poller pass progress');
    await ctx.hooks.afterPage?.({ resource: ctx.resource, page: stats.pages });
    if (ctx.isStopping()) throw new PassStoppedError(STOPPED);
  }
  await write(batch);
  stats.removed = await writeRemovals(ctx.db, ctx.resource, seen, removalCutoff, source);
}

/** A customer deleted since it was last seen answers 404: no issues (the customers pass publishes its removal). */
async function customerIssues(ctx: PassContext, customerId: string): Promise<PartnerRecord[]> {
  try {
    return (await ctx.partner.customerIssues(customerId, pollCall(ctx))).data.issues;
  } catch (error) {
    if ((error as { status?: unknown }).status === 404) return [];
    throw error;
  }
}

/**
 * A page of a snapshotted collection, stored for the guard's snapshots; its position only when the
 * list was read unfiltered (a filtered list numbers its pages otherwise). Never fails the pass.
 */
async function keepForSnapshots(
  ctx: PassContext,
  query: Record<string, string | number>,
  data: { items: PartnerRecord[]; current_page?: number },
  askedAt: number,
): Promise<void> {
  if (!ctx.snapshots || !SNAPSHOTTED.has(ctx.resource)) return;
  const unfiltered = Object.keys(query).every((k) => k === 'per_page');
  const position =
    unfiltered && data.current_page != null ? { page: data.current_page, perPage: ctx.perPage } : undefined;
  await ctx.snapshots
    .savePage(ctx.resource, data.items, askedAt, position)
    .catch((error: unknown) =>
      ctx.logger.warn({ err: error }, 'poller could not store a page for snapshots'),
    );
}
