/**
 * `npm run bench -- slow-record` (issue 52 item 1, decision 054): how long other records'
 * commands wait behind one slow record in their partition. One enrollment's report is held 5 s by
 * a delay fault in the sandbox; its payment is published first, then 20 payments for 20 other
 * enrollments, all to the same partition. Printed: each other payment's time from its publish to
 * its outcome (p50, max), and the slow one's. Before (one command per partition at a time) every
 * other payment waits out the 5 s; after, they overtake it.
 *
 *   npx tsx bench/slow-record.ts          # the figures, as JSON
 */
import { randomBytes } from 'node:crypto';
import { Kafka, logLevel } from 'kafkajs';
import { createCommandConsumer } from '../src/command-consumer/command-consumer.js';
import { rentalPayments } from '../src/command-types/rental-payments/rental-payments.js';
import { COMMAND_TYPES } from '../src/contracts/command-contracts.js';
import { toCloudEvent } from '../src/contracts/cloudevent.js';
import { createDb } from '../src/db/prisma.js';
import { ensureTopics, TOPICS } from '../src/kafka/topics.js';
import { createLogger } from '../src/logger.js';
import { createSandboxControl } from '../src/dev/sandbox/index.js';
import { createPartnerClient } from '../src/partner/index.js';
import { sandboxProcess } from './commands.js';
import { benchSchema, kafkaBrokers } from './env.js';
import type { BenchResult } from './types.js';

const OTHERS = 20;
const DELAY_MS = 5000;

const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;

interface Measured {
  p50: number;
  max: number;
  slow: number;
}

/** One run on fresh topics and schema; `concurrency` 1 is the old order: one command of a partition at a time. */
async function measure(concurrency?: number): Promise<Measured> {
  const { url, drop } = await benchSchema('bench_slow');
  const db = createDb(url, { max: 4 });
  const sandbox = await sandboxProcess();
  const control = createSandboxControl(sandbox.url);
  const kafka = new Kafka({ clientId: 'bench-slow', brokers: kafkaBrokers(), logLevel: logLevel.NOTHING });
  const prefix = `benchslow${randomBytes(3).toString('hex')}.`;
  const admin = kafka.admin();
  await admin.connect();
  const topics = [TOPICS.rentalPayments, TOPICS.rentalPaymentOutcomes, TOPICS.dlq(TOPICS.rentalPayments)];
  await ensureTopics(admin, { prefix, partitions: 3, topics });
  await admin.disconnect();
  const producer = kafka.producer();
  await producer.connect();
  const arrived = new Map<string, number>();
  let wake = () => {};
  const reader = kafka.consumer({ groupId: `bench-slow-${randomBytes(4).toString('hex')}` });
  await reader.connect();
  await reader.subscribe({ topic: `${prefix}${TOPICS.rentalPaymentOutcomes}`, fromBeginning: true });
  await reader.run({
    eachMessage: async ({ message }) => {
      const id = message.headers?.['command-id']?.toString();
      if (id && !arrived.has(id)) arrived.set(id, Date.now());
      wake();
    },
  });
  const until = (ids: string[]) =>
    new Promise<void>((resolve) => {
      wake = () => ids.every((id) => arrived.has(id)) && resolve();
      wake();
    });
  const logger = createLogger({ level: 'silent' });
  const consumer = createCommandConsumer(rentalPayments, {
    kafka,
    db,
    databaseUrl: url,
    partner: createPartnerClient({
      baseUrl: sandbox.url,
      accessKey: 'sandbox-access-key',
      secretKey: 'sandbox-secret-key',
      timeoutMs: 2 * DELAY_MS,
      logger,
    }),
    logger,
    topicPrefix: prefix,
    ...(concurrency && { concurrency }),
  });
  const enrollments = await control.addRecords(
    'enrollments',
    Array.from({ length: OTHERS + 2 }, () => ({ status: 'active', rental_payments: [] })),
  );
  const sent = new Map<string, number>();
  const pay = async (enrollment: number) => {
    const data = {
      payment_id: `pay-${randomBytes(4).toString('hex')}`,
      enrollment_id: enrollment,
      amount_cents: 125_000,
      paid_on: '2026-11-01',
    };
    const value = JSON.stringify(
      toCloudEvent({ id: data.payment_id, source: '/bench', type: COMMAND_TYPES.rentalPayment, data }),
    );
    sent.set(data.payment_id, Date.now());
    // One partition: the case, a small source's payment behind another's in its partition.
    await producer.send({
      topic: `${prefix}${TOPICS.rentalPayments}`,
      messages: [{ key: String(enrollment), partition: 0, value }],
    });
    return data.payment_id;
  };
  try {
    await consumer.start();
    // Warm up (token, connections) on a record of its own.
    await until([await pay(Number(enrollments[OTHERS + 1]!.id))]);
    const slow = Number(enrollments[0]!.id);
    const path = `/partner/v1/enrollments/${slow}/report_rental_payments`;
    await control.addFault({ method: 'POST', path, kind: 'delay', delay_ms: DELAY_MS, times: 1 });
    const slowId = await pay(slow);
    const others: string[] = [];
    for (let i = 1; i <= OTHERS; i++) others.push(await pay(Number(enrollments[i]!.id)));
    await until([slowId, ...others]);
    const waits = others.map((id) => arrived.get(id)! - sent.get(id)!).sort((a, b) => a - b);
    return { p50: quantile(waits, 0.5), max: waits.at(-1)!, slow: arrived.get(slowId)! - sent.get(slowId)! };
  } finally {
    await consumer.stop();
    await reader.disconnect();
    await producer.disconnect();
    sandbox.child.kill('SIGTERM');
    await db.$disconnect();
    await drop();
  }
}

export async function run(): Promise<BenchResult> {
  const before = await measure(1);
  const after = await measure();
  return {
    name: 'slow-record',
    figures: {
      'other payments': OTHERS,
      'delay on the slow record (ms)': DELAY_MS,
      'before: others, publish to outcome p50 (ms)': before.p50,
      'before: others, publish to outcome max (ms)': before.max,
      'before: slow payment, publish to outcome (ms)': before.slow,
      'after: others, publish to outcome p50 (ms)': after.p50,
      'after: others, publish to outcome max (ms)': after.max,
      'after: slow payment, publish to outcome (ms)': after.slow,
    },
    notes: [
      'all payments in one partition of commands.rental-payments',
      'before: CONSUMER_CONCURRENCY=1, one command at a time, the order a partition had (main at 672fa89, measured with this bench on its own code, gave p50 8322 ms, max 9954 ms)',
      'after: the defaults (CONSUMER_CONCURRENCY 8, CONSUMER_READ_AHEAD 2000)',
    ],
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  run().then((r) => console.log(JSON.stringify(r, null, 2)));
}
