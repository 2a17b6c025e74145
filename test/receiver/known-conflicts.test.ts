import { Writable } from 'node:stream';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { traceId } from '../../src/event-trace/trace.js';
import { createLogger } from '../../src/logger.js';
import { createInsightRouter } from '../../src/ops/insight-router.js';
import { closeServer, serveApp } from '../e2e/browser.js';
import { useTestDatabase } from '../support/db.js';
import { buildRentPayment, buildSecret, send, startReceiver, type TestReceiver } from './webhooks.js';

/**
 * What the receiver says when it knows (issue 54): a command id it has in PostgreSQL with other
 * content is answered 409 `conflicting_duplicate`, not 202; a refused webhook's log line names the
 * reason, and its request id leads to "refused at the receiver: <reason>" in the console's trace.
 */
describe('the receiver says what it knows', () => {
  const database = useTestDatabase();
  const acme = buildSecret();
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean))
        lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  let receiver: TestReceiver;

  beforeAll(async () => {
    receiver = await startReceiver({
      db: database.db,
      databaseUrl: database.url,
      partnerSecrets: [buildSecret()],
      pmsSecrets: { acme: [acme] },
      logger: createLogger({ level: 'info' }, sink),
    });
  });
  afterAll(async () => {
    await receiver?.close();
  });

  /** The guard's row of a command a consumer already took, with `data` as its payload. */
  async function taken(data: Record<string, unknown>, state = 'applied'): Promise<void> {
    await database.sql.query(
      `INSERT INTO commands (source, command_type, command_id, target_id, state, payload, request_id_base, request_ids)
       VALUES ('acme', 'rental_payment', $1, $2, $3, $4, $1, '{}')`,
      [data.payment_id, data.enrollment_id, state, JSON.stringify(data)],
    );
  }

  describe('when a payment id already in PostgreSQL comes again', () => {
    it('answers 409 conflicting_duplicate for other content, and stores nothing', async () => {
      const first = buildRentPayment();
      await taken(first.data);
      const other = { ...first, data: { ...first.data, amount_cents: 99 } };
      const res = await send(receiver.url, '/webhooks/pms/acme', other, { secret: acme });
      expect(res.status).toBe(409);
      expect(res.json.error).toMatchObject({
        code: 'conflicting_duplicate',
        command_id: first.data.payment_id,
        command_state: 'applied',
      });
      expect((res.json.error as { message: string }).message).toContain('with other content');
      const rows = await database.sql.query('SELECT 1 FROM outbox WHERE subject = $1', [
        first.data.payment_id,
      ]);
      expect(rows.rowCount).toBe(0);
    });

    it('takes the same content again (202: the consumer answers it from the row)', async () => {
      const first = buildRentPayment();
      await taken(first.data);
      // The same content, keys in another order: the same command.
      const again = { type: first.type, data: Object.fromEntries(Object.entries(first.data).reverse()) };
      const res = await send(receiver.url, '/webhooks/pms/acme', again, { secret: acme });
      expect(res.status).toBe(202);
    });

    it('takes a payment id not in PostgreSQL yet (the consumer judges it, as before)', async () => {
      const res = await send(receiver.url, '/webhooks/pms/acme', buildRentPayment(), { secret: acme });
      expect(res.status).toBe(202);
    });
  });

  describe('when a webhook is refused', () => {
    it('logs the reason, and the console trace of its request id says it was refused and why', async () => {
      const missing = await send(receiver.url, '/webhooks/pms/acme', buildRentPayment(), { unsigned: true });
      expect(missing.status).toBe(401);
      const badSignature = await send(receiver.url, '/webhooks/pms/acme', buildRentPayment(), {
        secret: buildSecret(),
      });
      expect(badSignature.status).toBe(401);
      const badField = await send(
        receiver.url,
        '/webhooks/pms/acme',
        buildRentPayment({ amount_cents: 'lots' }),
        { secret: acme },
      );
      expect(badField.status).toBe(422);

      const requestIdOf = (r: { json: Record<string, unknown> }) =>
        (r.json.error as { request_id: string }).request_id;
      const refused = (requestId: string) =>
        lines.find((l) => l.msg === 'webhook refused' && l.requestId === requestId);
      expect(refused(requestIdOf(missing))?.reason).toMatch(
        /webhook-id, webhook-timestamp and webhook-signature/,
      );
      expect(refused(requestIdOf(badSignature))?.reason).toBe('no valid signature');
      expect(refused(requestIdOf(badField))?.reason).toContain('amount_cents');
      // The reason names the field, never the value sent.
      expect(JSON.stringify(refused(requestIdOf(badField)))).not.toContain('lots');

      // The console's trace, in the process that refused it.
      const app = express();
      app.use(createInsightRouter({ db: database.db, topicPrefix: 't.' }));
      const { server, base } = await serveApp(app);
      try {
        const trace = (await (await fetch(`${base}/trace/${requestIdOf(badSignature)}`)).json()) as {
          found: boolean;
          ends: string[];
        };
        expect(trace.found).toBe(false);
        expect(trace.ends[0]).toMatch(
          /^refused at the receiver: no valid signature \(HTTP 401 unauthenticated/,
        );
      } finally {
        await closeServer(server);
      }
      // `rentbridge trace`, another process: says where a refused webhook's request id is.
      const cli = await traceId(database.db, 'req-never-seen', { topicPrefix: 't.', retentionHours: 72 });
      expect(cli.ends.join(' ')).toContain('A webhook the receiver refused is never stored');
    });
  });
});
