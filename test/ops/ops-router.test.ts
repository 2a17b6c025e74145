import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import express from 'express';
import type { Producer } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestId } from '../../src/http/request-id.js';
import { DEAD_LETTER_REASONS } from '../../src/dead-letters/dead-letter-headers.js';
import { COMMAND_KINDS } from '../../src/contracts/outcomes.js';
import { COMMAND_TOPICS, TOPICS } from '../../src/kafka/topics.js';
import { createLogger } from '../../src/logger.js';
import { createOpsRouter, type OpsRouter } from '../../src/ops/ops-router.js';
import { buildDecisionLetter, seedGuardRow, seedLetter } from '../dead-letters/build-dead-letter.js';
import { useApp } from '../support/app.js';
import type { TestDatabase } from '../support/db.js';
import type { TestKafka } from '../support/kafka.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- response bodies are asserted field by field
type Json = any;
const json = (res: Response): Promise<Json> => res.json();

const TOKEN = 'ops-token-0123456789abcdef';

async function listen(app: express.Express): Promise<{ server: Server; base: string }> {
  return new Promise((resolve) => {
    const server = app.listen(0, '127.0.0.1', () =>
      resolve({ server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}` }),
    );
  });
}

describe('ops router', () => {
  const app = useApp({ topics: [TOPICS.applicationDecisions], producer: true });
  let database: TestDatabase;
  let kafka: TestKafka;
  let producer: Producer;
  const servers: Server[] = [];
  const routers: OpsRouter[] = [];
  let base: string;
  let closedBase: string;

  function start(opsToken: string | undefined) {
    const app = express();
    app.use(requestId());
    const router = createOpsRouter({
      db: database.db,
      producer,
      logger: createLogger({ level: 'silent' }),
      opsToken,
      topicPrefix: kafka.prefix,
    });
    routers.push(router);
    app.use('/ops', router);
    return listen(app).then(({ server, base }) => {
      servers.push(server);
      return base;
    });
  }

  const call = (path: string, init: RequestInit & { token?: string | null } = {}) => {
    const headers = new Headers(init.headers);
    if (init.token !== null) headers.set('authorization', `Bearer ${init.token ?? TOKEN}`);
    if (init.body) headers.set('content-type', 'application/json');
    return fetch(`${base}${path}`, { ...init, headers });
  };

  beforeAll(async () => {
    ({ database, kafka, producer } = app);
    base = await start(TOKEN);
    closedBase = await start(undefined);
  });
  afterAll(async () => {
    await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
    await Promise.all(routers.map((r) => r.close()));
  });

  describe("when the console asks for its filters' choices", () => {
    it('lists every command type of the list of command types and every dead-letter reason', async () => {
      const res = await call('/ops/api/filters');
      expect(res.status).toBe(200);
      expect(await json(res)).toEqual({
        command_types: [...COMMAND_KINDS],
        reasons: [...DEAD_LETTER_REASONS],
        topics: [...COMMAND_TOPICS],
      });
    });
  });

  describe('when authorizing', () => {
    it('answers 401 without a token and with a wrong one (RFC 6750), 200 with the right one', async () => {
      const missing = await call('/ops/api/dead-letters', { token: null });
      expect(missing.status).toBe(401);
      expect((await json(missing)).error).toMatchObject({ status: 401, code: 'unauthenticated' });
      expect(missing.headers.get('x-request-id')).toBeTruthy();

      const wrong = await call('/ops/api/dead-letters', { token: 'not-the-token-at-all' });
      expect(wrong.status).toBe(401);
      expect((await json(wrong)).error.code).toBe('unauthenticated');
      expect(wrong.headers.get('www-authenticate')).toBe(
        'Bearer realm="rentbridge-ops", error="invalid_token"',
      );

      const ok = await call('/ops/api/dead-letters');
      expect(ok.status).toBe(200);
      expect(await json(ok)).toMatchObject({
        items: expect.any(Array),
        counts: { total: expect.any(Number) },
      });
    });

    it('answers 401 to an unknown token when OPS_TOKEN is not set', async () => {
      const res = await fetch(`${closedBase}/ops/api/dead-letters`, {
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      expect(res.status).toBe(401);
    });

    it('serves the console without a token', async () => {
      const redirect = await fetch(`${base}/ops`, { redirect: 'manual' });
      expect(redirect.status).toBe(301);
      const page = await fetch(`${base}/ops/`);
      expect(page.status).toBe(200);
      expect(await page.text()).toContain('<title>rentbridge ops');
      expect((await fetch(`${base}/ops/console.js`)).status).toBe(200);
    });
  });

  describe('when ops act on letters', () => {
    it('lists with filters and counts, shows one, redrives, discards, and audits each action', async () => {
      const applied = buildDecisionLetter(kafka.prefix, { reason: 'unverified', errorCode: 'timeout' });
      const appliedId = await seedLetter(database.db, kafka.prefix, applied);
      await seedGuardRow(database.db, applied.decisionId, 'applied');
      const other = buildDecisionLetter(kafka.prefix, { reason: 'rejected', errorCode: 'validation_error' });
      const otherId = await seedLetter(database.db, kafka.prefix, other);

      const list = await json(await call('/ops/api/dead-letters?reason=rejected'));
      expect(list.items.map((i: { id: number }) => i.id)).toEqual([otherId]);
      expect(list.counts.byCode).toEqual({ validation_error: 1 });
      expect((await call('/ops/api/dead-letters?since=not-a-date')).status).toBe(400);

      const detail = await json(await call(`/ops/api/dead-letters/${appliedId}`));
      expect(detail.letter.headers['dlq-command-id']).toBe(applied.decisionId);
      expect(detail.guard.state).toBe('applied');
      expect((await call('/ops/api/dead-letters/999999')).status).toBe(404);

      const closed = await call(`/ops/api/dead-letters/${appliedId}/redrive`, {
        method: 'POST',
        body: JSON.stringify({ reason: 'retry after outage' }),
        headers: { 'x-ops-actor': 'frank' },
      });
      expect(closed.status).toBe(200);
      expect((await json(closed)).letter.state).toBe('closed_applied');

      const invalid = await call(`/ops/api/dead-letters/${otherId}/redrive`, {
        method: 'POST',
        body: JSON.stringify({ corrected_value: '{"decision_id": "x"' }),
      });
      expect(invalid.status).toBe(422);
      const invalidSchema = await call(`/ops/api/dead-letters/${otherId}/redrive`, {
        method: 'POST',
        body: JSON.stringify({ corrected_value: { decision_id: other.decisionId, decision: 'approve' } }),
      });
      expect(invalidSchema.status).toBe(422);
      expect((await json(invalidSchema)).error.message).toMatch(/application_id/);

      const noReason = await call(`/ops/api/dead-letters/${otherId}/discard`, { method: 'POST', body: '{}' });
      expect(noReason.status).toBe(400);
      const discarded = await call(`/ops/api/dead-letters/${otherId}/discard`, {
        method: 'POST',
        body: JSON.stringify({ reason: 'duplicate of a manual fix' }),
        headers: { 'x-ops-actor': 'frank' },
      });
      expect(discarded.status).toBe(200);
      const again = await call(`/ops/api/dead-letters/${otherId}/discard`, {
        method: 'POST',
        body: JSON.stringify({ reason: 'twice' }),
      });
      expect(again.status).toBe(409);

      const fresh = buildDecisionLetter(kafka.prefix);
      const freshId = await seedLetter(database.db, kafka.prefix, fresh);
      const bulk = await json(
        await call('/ops/api/dead-letters/redrive', {
          method: 'POST',
          body: JSON.stringify({ ids: [freshId, otherId] }),
        }),
      );
      expect(bulk.outcomes.map((o: { action: string }) => o.action)).toEqual(['send', 'skip']);
      const [message] = await kafka.readMessages(TOPICS.applicationDecisions, 1);
      expect(message?.headers?.['redrive-by']?.toString()).toBe('break-glass');

      const audit = await json(await call('/ops/api/audit'));
      const rows = audit.items.map(
        (a: { actor: string; action: string; target: string; reason: string | null }) => [
          a.actor,
          a.action,
          a.target,
          a.reason,
        ],
      );
      expect(rows).toEqual(
        expect.arrayContaining([
          // OPS_TOKEN is break-glass: X-Ops-Actor names nobody (#44).
          ['break-glass', 'close_applied', `dead_letter:${appliedId}`, 'retry after outage'],
          ['break-glass', 'discard', `dead_letter:${otherId}`, 'duplicate of a manual fix'],
          ['break-glass', 'redrive', `dead_letter:${freshId}`, null],
        ]),
      );
      // Besides the three actions: the break-glass uses (every write, reads once a minute).
      expect(rows.filter((r: string[]) => r[1] !== 'break_glass')).toHaveLength(3);
    });
  });
});
