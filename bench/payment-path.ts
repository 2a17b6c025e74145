/**
 * `npm run bench -- path`: the files and folders of src/ whose code runs while one rental payment
 * goes from its Kafka message to its outcome (issue 40): the path a reader follows. Measured, not
 * read from the imports: V8's precise coverage over one payment, after a first payment has warmed
 * the process up (token, connections, lazily loaded modules). The sandbox runs in a process of its
 * own (it stands for the remote Partner API), so none of its files count.
 *
 *   npx tsx bench/payment-path.ts          # the figures and the files, as JSON
 */
import { randomBytes } from 'node:crypto';
import { Session } from 'node:inspector/promises';
import { fileURLToPath } from 'node:url';
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

const SRC = fileURLToPath(new URL('../src/', import.meta.url));

/** The folder a file of src/ belongs to; a file directly in src/ is in the foundation, no folder. */
export function folderOf(file: string): string | null {
  const parts = file.split('/');
  return parts.length > 1 ? parts[0]! : null;
}

export async function run(): Promise<BenchResult> {
  const { url, drop } = await benchSchema('bench_path');
  const db = createDb(url, { max: 4 });
  const sandbox = await sandboxProcess();
  const control = createSandboxControl(sandbox.url);
  const kafka = new Kafka({
    clientId: 'bench-path',
    brokers: kafkaBrokers(),
    logLevel: logLevel.NOTHING,
  });
  const prefix = `benchpath${randomBytes(3).toString('hex')}.`;
  const admin = kafka.admin();
  await admin.connect();
  const topics = [TOPICS.rentalPayments, TOPICS.rentalPaymentOutcomes, TOPICS.dlq(TOPICS.rentalPayments)];
  await ensureTopics(admin, { prefix, partitions: 1, topics });
  await admin.disconnect();
  const producer = kafka.producer();
  await producer.connect();
  const outcomes: string[] = [];
  let wake = () => {};
  const reader = kafka.consumer({ groupId: `bench-path-${randomBytes(4).toString('hex')}` });
  await reader.connect();
  await reader.subscribe({ topic: `${prefix}${TOPICS.rentalPaymentOutcomes}`, fromBeginning: true });
  await reader.run({
    eachMessage: async ({ message }) => {
      outcomes.push(message.key?.toString() ?? '');
      wake();
    },
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
      logger,
    }),
    logger,
    topicPrefix: prefix,
  });
  const [enrollment] = await control.addRecords('enrollments', [{ status: 'active', rental_payments: [] }]);
  const pay = async () => {
    const data = {
      payment_id: `pay-${randomBytes(4).toString('hex')}`,
      enrollment_id: Number(enrollment!.id),
      amount_cents: 125_000,
      paid_on: '2026-11-01',
      period: '2026-11',
    };
    const done = new Promise<void>((resolve) => {
      const seen = outcomes.length;
      wake = () => outcomes.length > seen && resolve();
    });
    await producer.send({
      topic: `${prefix}${TOPICS.rentalPayments}`,
      messages: [
        {
          key: String(data.enrollment_id),
          value: JSON.stringify(
            toCloudEvent({ id: data.payment_id, source: '/bench', type: COMMAND_TYPES.rentalPayment, data }),
          ),
        },
      ],
    });
    await done;
  };
  const session = new Session();
  session.connect();
  try {
    await consumer.start();
    await pay();
    await session.post('Profiler.enable');
    await session.post('Profiler.startPreciseCoverage', { callCount: true, detailed: false });
    await session.post('Profiler.takePreciseCoverage'); // resets the counts
    await pay();
    const { result } = await session.post('Profiler.takePreciseCoverage');
    const files = result
      .filter((s) => s.url.startsWith(`file://${SRC}`) && s.functions.some((f) => f.ranges[0]!.count > 0))
      .map((s) => fileURLToPath(s.url).slice(SRC.length))
      .sort();
    const folders = [...new Set(files.map(folderOf).filter((f) => f !== null))].sort();
    return {
      name: 'path',
      figures: {
        files: files.length,
        folders: folders.length,
        'files directly in src/ (foundation)': files.filter((f) => folderOf(f) === null).length,
        ...Object.fromEntries(
          folders.map((f) => [`files in ${f}/`, files.filter((x) => folderOf(x) === f).length]),
        ),
      },
      notes: [`the files: ${files.join(', ')}`],
    };
  } finally {
    session.disconnect();
    await consumer.stop();
    await reader.disconnect();
    await producer.disconnect();
    sandbox.child.kill('SIGTERM');
    await db.$disconnect();
    await drop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  run().then((r) => console.log(JSON.stringify(r, null, 2)));
}
