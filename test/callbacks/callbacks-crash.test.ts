import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import type { Producer } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cloudEventHeaders, toCloudEvent } from '../../src/contracts/cloudevent.js';
import { OUTCOME_TYPES } from '../../src/contracts/outcomes.js';
import { OUTCOME_TOPICS } from '../../src/kafka/topics.js';
import { TOPICS } from '../../src/kafka/topics.js';
import { spawnCli, storesEnv } from '../support/cli.js';
import { useApp } from '../support/app.js';
import type { TestDatabase } from '../support/db.js';
import { freePort } from '../support/free-port.js';
import type { TestKafka } from '../support/kafka.js';
import { buildSecret } from '../receiver/webhooks.js';
import { until } from './callback-receiver.js';
import { startReceiverOn } from './receiver-on-port.js';

/**
 * The callbacks role as its own process (`rentbridge callbacks run`), SIGKILLed mid-run while the
 * PMS endpoint goes away too, then both back: every outcome of the source is delivered at least
 * once, every callback verified by svix.
 */
describe('rentbridge callbacks run, killed mid-run with its endpoint down', () => {
  const app = useApp({ topics: [...OUTCOME_TOPICS], producer: true });
  let database: TestDatabase;
  let kafka: TestKafka;
  let producer: Producer;
  let endpointPort: number;
  let httpPort: number;
  const secret = buildSecret();
  const children: ChildProcess[] = [];
  let log = '';

  function startRole(): ChildProcess {
    const child = spawnCli(
      ['callbacks', 'run'],
      {
        ...storesEnv(database, kafka),
        HTTP_PORT: String(httpPort),
        PMS_CALLBACKS: JSON.stringify({
          acme: { url: `http://127.0.0.1:${endpointPort}/acme`, secrets: [secret], timeout_ms: 1000 },
        }),
        CALLBACK_RETRY_INITIAL_MS: '100',
        CALLBACK_RETRY_MAX_DELAY_MS: '500',
        CALLBACK_BREAKER_COOLDOWN_MS: '300',
        CALLBACK_POLL_MS: '100',
        LOG_LEVEL: 'warn',
      },
      (text) => (log += text),
    );
    children.push(child);
    return child;
  }

  async function ready(): Promise<void> {
    await until(
      `/readyz of the callbacks role\n${log}`,
      async () => (await fetch(`http://127.0.0.1:${httpPort}/readyz`).catch(() => null))?.status === 200,
      60_000,
    );
  }

  async function publish(count: number): Promise<string[]> {
    const ids: string[] = [];
    const messages = Array.from({ length: count }, () => {
      const id = `outcome.${randomUUID()}`;
      ids.push(`${id}.applied`);
      const data = {
        command_id: `pay-${randomUUID()}`,
        command_source: 'acme',
        command_type: 'rental_payment' as const,
        target_id: `enr-${randomUUID().slice(0, 8)}`,
        status: 'applied' as const,
        attempts: 1,
        partner_request_ids: [],
      };
      const event = toCloudEvent({ id, source: 'test', type: OUTCOME_TYPES.rental_payment, data });
      return {
        key: data.target_id,
        value: JSON.stringify(event),
        headers: { ...cloudEventHeaders(event), 'command-source': 'acme' },
      };
    });
    await producer.send({ topic: `${kafka.prefix}${TOPICS.rentalPaymentOutcomes}`, messages });
    return ids;
  }

  beforeAll(async () => {
    ({ database, kafka, producer } = app);
    endpointPort = await freePort();
    httpPort = await freePort();
  });

  afterAll(async () => {
    for (const child of children)
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });

  it('delivers every outcome at least once, each verified', async () => {
    let endpoint = await startReceiverOn(endpointPort, [secret]);
    const first = startRole();
    await ready();
    const published = await publish(100);
    await until('some delivered', () => endpoint.received.length >= 10);
    // Both go at once: the process mid-delivery, the endpoint with it.
    first.kill('SIGKILL');
    await endpoint.close();
    const received = [...endpoint.received];
    published.push(...(await publish(100)));
    const second = startRole();
    await ready();
    published.push(...(await publish(100)));
    // The endpoint still away: the new process fails, backs off, and its breaker opens.
    await new Promise((r) => setTimeout(r, 1500));
    endpoint = await startReceiverOn(endpointPort, [secret]);
    try {
      await until(
        'every outcome delivered',
        () =>
          published.every(
            (id) =>
              received.some((r) => r.webhookId === id) || endpoint.received.some((r) => r.webhookId === id),
          ),
        120_000,
      );
      const all = [...received, ...endpoint.received];
      expect(all.every((r) => r.verified)).toBe(true);
      const duplicates = all.length - new Set(all.map((r) => r.webhookId)).size;
      // At least once: a duplicate is allowed (a delivery whose answer the killed process never
      // recorded), and the PMS dedupes it by webhook-id; it is reported, not hidden.
      console.info(
        `callbacks after a kill: ${published.length} outcomes, ${all.length} received, ${duplicates} duplicates`,
      );
      // Each recorded as delivered (the killed process's unrecorded ones once their lease ran out).
      await until('every delivery recorded as delivered', async () => {
        const { rows } = await database.sql.query<{ state: string; n: number }>(
          'SELECT state, count(*)::int AS n FROM callback_deliveries GROUP BY state',
        );
        return rows.length === 1 && rows[0]!.state === 'delivered' && rows[0]!.n === 300;
      });
    } finally {
      second.kill('SIGTERM');
      await new Promise((r) => second.once('exit', r));
      await endpoint.close();
    }
  }, 240_000);
});
