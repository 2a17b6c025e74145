import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  deadLetterFiltersSchema,
  type DeadLetterFiltersInput,
} from '../../src/dead-letters/dead-letter-filters.js';
import { countDeadLetters, searchDeadLetters } from '../../src/dead-letters/dead-letter-repository.js';
import { TOPICS } from '../../src/kafka/topics.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { buildDecisionLetter, seedLetter } from './build-dead-letter.js';

const prefix = 'srch.';

describe('dead-letter search', () => {
  let database: TestDatabase;
  const ids: Record<string, number> = {};
  const letters = {
    a: buildDecisionLetter(prefix, { reason: 'unverified', errorCode: 'api_error' }),
    b: buildDecisionLetter(prefix, {
      reason: 'rejected',
      errorCode: 'invalid_state_transition',
      errorMessage: 'Application cannot be approved from state withdrawn',
      lastFailureAt: new Date('2026-11-01T00:00:00Z'),
    }),
    c: buildDecisionLetter(prefix, {
      reason: 'exhausted',
      errorCode: 'api_error',
      originalTopic: `${prefix}${TOPICS.rentalPayments}`,
    }),
  };

  async function search(input: DeadLetterFiltersInput) {
    const rows = await searchDeadLetters(database.db, deadLetterFiltersSchema.parse(input), prefix);
    return rows.map((r) => r.id).sort();
  }

  beforeAll(async () => {
    database = await createTestDatabase();
    for (const [name, letter] of Object.entries(letters))
      ids[name] = await seedLetter(database.db, prefix, letter);
    await database.db.deadLetter.update({ where: { id: BigInt(ids.c!) }, data: { state: 'discarded' } });
  });
  afterAll(async () => {
    await database.drop();
  });

  describe('when filtering', () => {
    it('finds open letters only by default, every state with state=all', async () => {
      expect(await search({})).toEqual([ids.a, ids.b].sort());
      expect(await search({ state: 'all' })).toEqual([ids.a, ids.b, ids.c].sort());
      expect(await search({ state: 'discarded' })).toEqual([ids.c]);
    });

    it('filters by topic, with or without the prefix, DLQ or original', async () => {
      expect(await search({ state: 'all', topic: TOPICS.rentalPayments })).toEqual([ids.c]);
      expect(await search({ state: 'all', topic: `${prefix}${TOPICS.rentalPayments}` })).toEqual([ids.c]);
      expect(await search({ topic: TOPICS.dlq(TOPICS.applicationDecisions) })).toEqual([ids.a, ids.b].sort());
    });

    it('filters by reason, error code, key, command id and partner request id', async () => {
      expect(await search({ reason: 'rejected' })).toEqual([ids.b]);
      expect(await search({ state: 'all', code: 'api_error' })).toEqual([ids.a, ids.c].sort());
      expect(await search({ key: letters.a.key })).toEqual([ids.a]);
      expect(await search({ commandId: letters.b.decisionId })).toEqual([ids.b]);
      expect(await search({ requestId: letters.a.info.partnerRequestIds[1] })).toEqual([ids.a]);
    });

    it('filters by time range on indexed_at or last_failure_at', async () => {
      expect(await search({ since: '2000-01-01' })).toEqual([ids.a, ids.b].sort());
      expect(await search({ until: '2000-01-01' })).toEqual([]);
      expect(await search({ timeField: 'last_failure', until: '2026-11-10T00:00:00Z' })).toEqual([ids.b]);
      expect(await search({ timeField: 'last_failure', since: '2026-11-10T00:00:00Z' })).toEqual([ids.a]);
    });

    it('searches free text in the value and the error message, case-insensitively', async () => {
      expect(await search({ search: 'WITHDRAWN' })).toEqual([ids.b]);
      expect(await search({ search: letters.a.decisionId })).toEqual([ids.a]);
      expect(await search({ search: 'no such text anywhere' })).toEqual([]);
    });
  });

  describe('when counting', () => {
    it('counts the matching letters by reason and by error code', async () => {
      const counts = await countDeadLetters(
        database.db,
        deadLetterFiltersSchema.parse({ state: 'all' }),
        prefix,
      );
      expect(counts).toEqual({
        total: 3,
        byReason: { unverified: 1, rejected: 1, exhausted: 1 },
        byCode: { api_error: 2, invalid_state_transition: 1 },
        capped: false,
      });
    });

    it('counts at most the newest letters of a cap, and says so', async () => {
      const filters = deadLetterFiltersSchema.parse({ state: 'all' });
      const all = await searchDeadLetters(database.db, filters, prefix);
      const newest = all.slice(0, 2);
      const counts = await countDeadLetters(database.db, filters, prefix, 2);
      expect(counts.capped).toBe(true);
      expect(counts.total).toBe(2);
      const byReason: Record<string, number> = {};
      for (const l of newest) byReason[l.reason ?? '(none)'] = (byReason[l.reason ?? '(none)'] ?? 0) + 1;
      expect(counts.byReason).toEqual(byReason);
      expect((await countDeadLetters(database.db, filters, prefix, 3)).capped).toBe(false);
    });
  });
});
