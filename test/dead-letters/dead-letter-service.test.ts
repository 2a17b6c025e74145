import type { Producer } from 'kafkajs';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  auditFiltersSchema,
  deadLetterFiltersSchema,
  filtersFromQuery,
  parseFilters,
} from '../../src/dead-letters/dead-letter-filters.js';
import {
  createDeadLetterService,
  type DeadLetterService,
} from '../../src/dead-letters/dead-letter-service.js';
import { REDRIVE_HEADER } from '../../src/dead-letters/dead-letter-headers.js';
import { AppError } from '../../src/errors.js';
import { TOPICS } from '../../src/kafka/topics.js';
import { createLogger } from '../../src/logger.js';
import { useApp } from '../support/app.js';
import type { TestDatabase } from '../support/db.js';
import type { TestKafka } from '../support/kafka.js';
import { buildDecisionLetter, seedGuardRow, seedLetter } from './build-dead-letter.js';

describe('the dead-letter service', () => {
  const app = useApp({ topics: [TOPICS.applicationDecisions], producer: true });
  let database: TestDatabase;
  let kafka: TestKafka;
  let producer: Producer;
  let letters: DeadLetterService;
  let producerAsked = 0;
  const declined = {
    code: 'processor_card_error',
    status: 402,
    message: 'Your card was declined.',
    request_id: 'pay-1.a1',
    processor_code: 'card_declined',
  };

  beforeAll(() => {
    ({ database, kafka, producer } = app);
    letters = createDeadLetterService({
      db: database.db,
      topicPrefix: kafka.prefix,
      logger: createLogger({ level: 'silent' }),
      producer: () => {
        producerAsked += 1;
        return Promise.resolve(producer);
      },
    });
  });

  describe('when showing a letter', () => {
    it("reads the Partner error from the letter's dlq-error header first", async () => {
      const letter = buildDecisionLetter(kafka.prefix, { reason: 'rejected', error: declined as never });
      const id = await seedLetter(database.db, kafka.prefix, letter);
      await seedGuardRow(database.db, letter.decisionId, 'rejected', letter.applicationId);
      const detail = await letters.show(id);
      expect(detail?.letter.id).toBe(id);
      expect(detail?.guard?.state).toBe('rejected');
      expect(detail?.partnerError).toEqual(declined);
      expect(detail?.audit).toEqual([]);
    });

    it("falls back to the guard row's last error, and is null when there is neither", async () => {
      const withGuard = buildDecisionLetter(kafka.prefix);
      const withGuardId = await seedLetter(database.db, kafka.prefix, withGuard);
      await seedGuardRow(database.db, withGuard.decisionId, 'exhausted', withGuard.applicationId);
      expect((await letters.show(withGuardId))?.partnerError).toEqual({ code: 'api_error', status: 503 });

      const bare = await seedLetter(database.db, kafka.prefix, buildDecisionLetter(kafka.prefix));
      expect((await letters.show(bare))?.partnerError).toBeNull();
      expect(await letters.show(999_999_999)).toBeNull();
    });
  });

  describe('when listing and finding', () => {
    it('returns the page and the counts of every match, and the ids a --where redrive takes', async () => {
      const code = `svc_${Date.now()}`;
      const first = await seedLetter(
        database.db,
        kafka.prefix,
        buildDecisionLetter(kafka.prefix, { errorCode: code }),
      );
      const second = await seedLetter(
        database.db,
        kafka.prefix,
        buildDecisionLetter(kafka.prefix, { errorCode: code }),
      );
      const page = await letters.list(parseFilters(deadLetterFiltersSchema, { code, limit: '1' }));
      expect(page.items.map((l) => l.id)).toEqual([second]);
      expect(page.counts).toEqual({
        total: 2,
        byReason: { unverified: 2 },
        byCode: { [code]: 2 },
        capped: false,
      });
      expect(await letters.matchingIds(parseFilters(deadLetterFiltersSchema, { code }))).toEqual([
        first,
        second,
      ]);
    });
  });

  describe('when redriving several letters', () => {
    it('redrives each in turn, reports progress after each and sends each once', async () => {
      const a = buildDecisionLetter(kafka.prefix);
      const b = buildDecisionLetter(kafka.prefix);
      const ids = [
        await seedLetter(database.db, kafka.prefix, a),
        await seedLetter(database.db, kafka.prefix, b),
      ];
      const progress: Array<[number, number]> = [];
      const outcomes = await letters.redriveMany(ids, { actor: 'svc-test', reason: 'bulk' }, (done, total) =>
        progress.push([done, total]),
      );
      expect(outcomes.map((o) => [o.id, o.action])).toEqual([
        [ids[0], 'send'],
        [ids[1], 'send'],
      ]);
      expect(progress).toEqual([
        [1, 2],
        [2, 2],
      ]);
      const sent = await kafka.readMessages(TOPICS.applicationDecisions, 2);
      expect(sent.map((m) => m.headers?.[REDRIVE_HEADER.redrivenFrom]?.toString()).sort()).toEqual(
        ids.map(String).sort(),
      );
      const audit = await letters.audit(filtersFromQuery(auditFiltersSchema, { actor: 'svc-test' }));
      expect(audit.map((e) => e.action)).toEqual(['redrive', 'redrive']);
    });

    it('never asks for the producer on a dry run', async () => {
      const id = await seedLetter(database.db, kafka.prefix, buildDecisionLetter(kafka.prefix));
      const before = producerAsked;
      const [outcome] = await letters.redriveMany([id], { actor: 'svc-test', dryRun: true });
      expect(outcome).toMatchObject({ action: 'send', dryRun: true });
      expect(producerAsked).toBe(before);
      expect((await letters.show(id))?.letter.state).toBe('open');
    });
  });

  describe('when redriving or discarding one letter', () => {
    it('returns the outcome with the letter as it is afterwards', async () => {
      const redriven = await seedLetter(database.db, kafka.prefix, buildDecisionLetter(kafka.prefix));
      const result = await letters.redrive(redriven, { actor: 'svc-test' });
      expect(result.outcome.action).toBe('send');
      expect(result.letter).toMatchObject({ id: redriven, state: 'redriven', resolvedBy: 'svc-test' });

      const dropped = await seedLetter(database.db, kafka.prefix, buildDecisionLetter(kafka.prefix));
      const discarded = await letters.discard(dropped, { actor: 'svc-test', reason: 'test data' });
      expect(discarded.outcome.action).toBe('discarded');
      expect(discarded.letter).toMatchObject({ state: 'discarded', resolution: 'test data' });
    });
  });

  describe('when filters come from a query string or the command line', () => {
    it('maps snake_case names, drops empty values and refuses NUL and far dates with a 400', () => {
      expect(
        filtersFromQuery(deadLetterFiltersSchema, { command_id: 'c-1', time_field: 'last_failure', key: '' }),
      ).toMatchObject({ commandId: 'c-1', timeField: 'last_failure', state: 'open' });
      for (const bad of [{ actor: 'a\u0000b' }, { since: '10000-01-01' }]) {
        let thrown: unknown;
        try {
          filtersFromQuery(auditFiltersSchema, bad);
        } catch (error) {
          thrown = error;
        }
        expect(thrown).toBeInstanceOf(AppError);
        expect(thrown).toMatchObject({ status: 400, code: 'validation_error' });
      }
    });
  });
});
