import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TOPICS } from '../../src/kafka/topics.js';
import { buildDecisionLetter, seedLetter } from '../dead-letters/build-dead-letter.js';
import { useApp } from '../support/app.js';
import type { TestDatabase } from '../support/db.js';
import type { TestKafka } from '../support/kafka.js';

/**
 * Property-based fuzzing of the ops API's actions and filters (issue 14): bodies of any content
 * type, filters of any text. Never a 5xx; a body that is not JSON is never taken as "no options",
 * so the letter stays open whatever arrives that is not a JSON object.
 */
const TOKEN = 'ops-token-0123456789abcdef';
const tally = { requests: 0, fiveXx: 0 };

describe('ops API fuzzing', () => {
  const app = useApp({ topics: [TOPICS.applicationDecisions], producer: true, ops: { opsToken: TOKEN } });
  let database: TestDatabase;
  let kafka: TestKafka;
  let base: string;
  let letter: number;

  beforeAll(async () => {
    ({ database, kafka, base } = app);
    letter = await seedLetter(database.db, kafka.prefix, buildDecisionLetter(kafka.prefix));
  });
  afterAll(() => {
    console.log(`ops fuzz: ${tally.requests} requests, ${tally.fiveXx} answered 5xx`);
  });

  async function call(path: string, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers(init.headers);
    headers.set('authorization', `Bearer ${TOKEN}`);
    const res = await fetch(`${base}${path}`, { ...init, headers });
    tally.requests += 1;
    if (res.status >= 500) tally.fiveXx += 1;
    return res;
  }

  it('refuses every action body that is not JSON, never 5xx, and leaves the letter open', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('redrive', 'discard'),
        fc.constantFrom(
          'application/x-www-form-urlencoded',
          'text/plain',
          'multipart/form-data; boundary=x',
          'application/octet-stream',
          'application/xml',
          'text/json',
        ),
        fc.oneof(
          fc.json(),
          fc.string({ minLength: 1 }),
          fc.constantFrom('{"dry_run":true}', 'dry_run=true&reason=x', '{"reason":"x"}'),
        ),
        async (action, type, body) => {
          const res = await call(`/ops/api/dead-letters/${letter}/${action}`, {
            method: 'POST',
            body,
            headers: { 'content-type': type },
          });
          expect(res.status).toBe(415);
          expect(((await res.json()) as { error: { code: string } }).error.code).toBe(
            'unsupported_media_type',
          );
        },
      ),
      { numRuns: 150 },
    );
    const detail = (await (await call(`/ops/api/dead-letters/${letter}`)).json()) as {
      letter: { state: string };
      audit: unknown[];
    };
    expect(detail.letter.state).toBe('open');
    expect(detail.audit).toEqual([]);
  });

  it('answers filters of any text with 200 or 400 in the envelope, never 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(
          'search',
          'key',
          'topic',
          'code',
          'command_id',
          'request_id',
          'since',
          'until',
          'limit',
          'state',
        ),
        fc.oneof(
          fc.string({ maxLength: 40 }),
          fc.string({ unit: 'grapheme', maxLength: 20 }),
          fc.constantFrom(
            '\u0000',
            '%',
            '_',
            '\\',
            '99999',
            '-1',
            '+275760-09-13',
            '0000-01-01',
            '9999-12-31T23:59:59Z',
          ),
        ),
        async (name, value) => {
          const res = await call(`/ops/api/dead-letters?state=all&${name}=${encodeURIComponent(value)}`);
          expect([200, 400]).toContain(res.status);
          if (res.status === 400) {
            expect(((await res.json()) as { error: { status: number } }).error.status).toBe(400);
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});
