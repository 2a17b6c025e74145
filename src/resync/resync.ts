import type { Db } from '../db/prisma.js';
import type { Logger } from '../logger.js';
import type { ListQuery, PagedResource } from '../partner/index.js';
import { RESOURCES, type Resource } from '../partner/resources.js';
import { COLLECTION_RULES } from '../poller/collections.js';
import type { PollerPartner } from '../poller/partner-port.js';
import { PER_PAGE } from '../poller/resource-pass.js';
import { withVersion } from '../poller/record-version.js';
import { knownCustomerIds } from '../poller/poller-repository.js';
import { finishResync, readPosition, resetPosition, writeResyncPage } from './resync-repository.js';

/**
 * `rentbridge resync`: republishes the current state of every record of a resource (or all) on
 * partner.<resource>, as `partner.<x>.updated` with data.via `resync` — for a changelog that was
 * lost, truncated or never compacted (docs/decisions/024). Every read is on the rate budget's
 * `poll` lane (decision 015), so writes and read-backs keep their priority; the walk is the
 * poller's drift-safe one, every collection read in full (no date filter), 1000 records a page.
 * Each page is written with the position, so a stopped resync goes on from its last page.
 */

export interface ResyncProgress {
  resource: Resource;
  /** Pages (or customers, for customer_issues) whose records are in the outbox. */
  pagesDone: number;
  /** Pages the collection had at the first read (customers, for customer_issues). */
  pageCount: number;
  records: number;
  elapsedMs: number;
  /** True when it went on from a stopped resync's position. */
  resumed: boolean;
  /** Tombstones written for records seen removed (at the end). */
  tombstones?: number;
}

export interface ResyncOptions {
  partner: PollerPartner;
  db: Db;
  logger: Logger;
  /** Records per page asked for. Default 1000 (the most the API serves: fewest requests). */
  perPage?: number;
  /** Called after each page is written, and at the end of each resource. */
  onProgress?: (progress: ResyncProgress) => void;
  /** Checked between pages: true stops the resync, its position kept. */
  isStopping?: () => boolean;
}

export class ResyncStoppedError extends Error {
  override name = 'ResyncStoppedError';
}

export interface Resync {
  /** Resyncs one resource or every one, in order; `restart` ignores a stopped resync's position. */
  run(options?: { resource?: Resource; restart?: boolean }): Promise<ResyncProgress[]>;
}

export function createResync(options: ResyncOptions): Resync {
  const { db, partner } = options;
  const perPage = options.perPage ?? PER_PAGE;
  const logger = options.logger.child({ component: 'resync' });

  async function resyncResource(resource: Resource, restart: boolean): Promise<ResyncProgress> {
    const clock = Date.now();
    const resumeFrom = restart ? null : await readPosition(db, resource);
    if (!resumeFrom) await resetPosition(db, resource);
    const progress: ResyncProgress = {
      resource,
      pagesDone: resumeFrom?.pagesDone ?? 0,
      pageCount: 0,
      records: resumeFrom?.records ?? 0,
      elapsedMs: 0,
      resumed: resumeFrom !== null,
    };
    logger.info({ resource, resumeFromPage: progress.pagesDone, restart }, 'resync started');
    const report = () => {
      progress.elapsedMs = Date.now() - clock;
      options.onProgress?.({ ...progress });
    };
    const write = async (records: Record<string, unknown>[], pagesDone: number, scope: string = resource) => {
      const versioned = records.map((r) => withVersion(r, scope));
      progress.pagesDone = Math.max(progress.pagesDone, pagesDone);
      progress.records += versioned.length;
      await writeResyncPage(db, resource, versioned, progress);
      report();
      if (progress.pagesDone % 10 === 0) logger.info({ ...progress }, 'resync progress');
      if (options.isStopping?.()) throw new ResyncStoppedError('resync stopping: its position is kept');
    };

    const rule = COLLECTION_RULES[resource];
    if (rule.kind === 'dated' || rule.kind === 'full') {
      // Resuming re-reads the last page written: a delete since then may have shifted a record
      // back onto it. Its records are published again (once more each, at most a page).
      const query = { per_page: perPage, page: Math.max(1, progress.pagesDone) };
      const walk = partner.pages(resource as PagedResource, query as ListQuery, { lane: 'poll' });
      for await (const page of walk) {
        if (progress.pageCount === 0) progress.pageCount = page.data.page_count;
        await write(page.data.items, page.data.current_page);
      }
    } else if (rule.kind === 'bank_accounts') {
      progress.pageCount = 1;
      const response = await partner.bankAccounts({ lane: 'poll' });
      await write(response.data, 1);
    } else {
      // Issues of every known customer, a request each; the position counts customers.
      const customers = await knownCustomerIds(db);
      progress.pageCount = customers.length;
      for (let i = progress.pagesDone; i < customers.length; i++) {
        const customerId = customers[i]!;
        let issues: Record<string, unknown>[] = [];
        try {
          issues = (await partner.customerIssues(customerId, { lane: 'poll' })).data.issues;
        } catch (error) {
          if ((error as { status?: unknown }).status !== 404) throw error;
        }
        await write(
          issues.map((issue) => ({ customer_id: customerId, ...issue })),
          i + 1,
          `customer:${customerId}`,
        );
      }
    }
    progress.tombstones = await finishResync(db, resource);
    report();
    logger.info({ ...progress }, 'resync completed');
    return progress;
  }

  return {
    async run({ resource, restart = false } = {}) {
      const results: ResyncProgress[] = [];
      for (const r of resource ? [resource] : RESOURCES) results.push(await resyncResource(r, restart));
      return results;
    },
  };
}
