import type { Producer } from 'kafkajs';
import type { Db } from '../db/prisma.js';
import type { Logger } from '../logger.js';
import type { OutcomeError } from '../partner/errors.js';
import { deadLetterTarget, listAudit, type AuditEntry } from './audit-repository.js';
import type { AuditFilters, DeadLetterFilters } from './dead-letter-filters.js';
import { DLQ_HEADER, fromDeadLetterHeaders } from './dead-letter-headers.js';
import {
  countDeadLetters,
  findDeadLetterIds,
  getDeadLetter,
  searchDeadLetters,
  type DeadLetter,
  type DeadLetterCounts,
} from './dead-letter-repository.js';
import type { GuardStateView } from './guard-state-repository.js';
import {
  discardDeadLetter,
  letterGuardState,
  redriveDeadLetter,
  type DiscardOutcome,
  type RedriveOptions,
  type RedriveOutcome,
} from './redrive.js';

/**
 * The one dead-letter service behind the ops API, `rentbridge dlq` and (through the API) the
 * console: they parse their input and format its view models, nothing more
 * (docs/decisions/032-one-dead-letter-service.md).
 */

export interface DeadLetterServiceDeps {
  db: Db;
  /** KAFKA_TOPIC_PREFIX. */
  topicPrefix: string;
  logger: Logger;
  /**
   * The process's one producer (src/kafka/shared-producer.ts), asked for only when a redrive
   * sends: listing, showing, discarding and dry runs never connect to Kafka.
   */
  producer(): Promise<Pick<Producer, 'send'>>;
}

/** A page of letters and the counts of every letter the filters match. */
export interface DeadLetterList {
  items: DeadLetter[];
  counts: DeadLetterCounts;
}

/** One letter as ops see it: the letter, its command's guard row, its audit trail, the Partner error. */
export interface DeadLetterDetail {
  letter: DeadLetter;
  guard: GuardStateView | null;
  audit: AuditEntry[];
  /** The Partner API's whole error for this letter, or null (see `partnerErrorOf`). */
  partnerError: OutcomeError | null;
}

/** A redrive or discard of one letter, and the letter as it is afterwards. */
export interface LetterActionResult<O> {
  outcome: O;
  letter: DeadLetter | null;
}

/** Told after each letter of a bulk redrive: how many are done of how many. */
export type RedriveProgress = (done: number, total: number) => void;

export interface DeadLetterService {
  list(filters: DeadLetterFilters): Promise<DeadLetterList>;
  /** Ids of every letter the filters match (up to their limit), oldest first: what `--where` redrives. */
  matchingIds(filters: DeadLetterFilters): Promise<number[]>;
  show(id: number): Promise<DeadLetterDetail | null>;
  redrive(id: number, options: RedriveOptions): Promise<LetterActionResult<RedriveOutcome>>;
  /** Redrives each letter in turn (one transaction each), saying after each how far it is. */
  redriveMany(ids: number[], options: RedriveOptions, progress?: RedriveProgress): Promise<RedriveOutcome[]>;
  discard(
    id: number,
    options: { actor: string; reason: string },
  ): Promise<LetterActionResult<DiscardOutcome>>;
  audit(filters: Partial<AuditFilters>): Promise<AuditEntry[]>;
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  value != null && typeof value === 'object' && !Array.isArray(value);

/**
 * The Partner API's whole error for a letter, read in one place for the API, the CLI and the
 * console: the `dlq-error` header (the outcome's `error`, JSON), else the guard row's last error.
 */
export function partnerErrorOf(letter: DeadLetter, guard: GuardStateView | null): OutcomeError | null {
  const fromHeader = fromDeadLetterHeaders({ [DLQ_HEADER.error]: letter.headers[DLQ_HEADER.error] }).error;
  if (fromHeader) return fromHeader;
  return isObject(guard?.lastError) ? (guard.lastError as unknown as OutcomeError) : null;
}

export function createDeadLetterService(deps: DeadLetterServiceDeps): DeadLetterService {
  const { db, topicPrefix, logger } = deps;
  const redriveDeps = { db, topicPrefix, logger, producer: () => deps.producer() };

  return {
    async list(filters) {
      const [items, counts] = await Promise.all([
        searchDeadLetters(db, filters, topicPrefix),
        countDeadLetters(db, filters, topicPrefix),
      ]);
      return { items, counts };
    },

    matchingIds: (filters) => findDeadLetterIds(db, filters, topicPrefix),

    async show(id) {
      const letter = await getDeadLetter(db, id);
      if (!letter) return null;
      const [guard, audit] = await Promise.all([
        letterGuardState(db, letter, topicPrefix),
        listAudit(db, { target: deadLetterTarget(id) }),
      ]);
      return { letter, guard, audit, partnerError: partnerErrorOf(letter, guard) };
    },

    async redrive(id, options) {
      const outcome = await redriveDeadLetter(redriveDeps, id, options);
      return { outcome, letter: await getDeadLetter(db, id) };
    },

    async redriveMany(ids, options, progress) {
      const outcomes: RedriveOutcome[] = [];
      for (const id of ids) {
        outcomes.push(await redriveDeadLetter(redriveDeps, id, options));
        progress?.(outcomes.length, ids.length);
      }
      return outcomes;
    },

    async discard(id, options) {
      const outcome = await discardDeadLetter({ db }, id, options);
      return { outcome, letter: await getDeadLetter(db, id) };
    },

    audit: (filters) => listAudit(db, filters),
  };
}
