import { randomBytes } from 'node:crypto';
import type { Consumer, IHeaders, KafkaMessage, Producer } from 'kafkajs';
import {
  createCommandConsumer,
  type CommandConsumer,
  type CommandConsumerDeps,
} from '../../../src/command-consumer/command-consumer.js';
import type { CommandType } from '../../../src/command-types/command-type.js';
import { COMMAND_TYPES } from '../../../src/contracts/command-contracts.js';
import { toCloudEvent } from '../../../src/contracts/cloudevent.js';
import type { CommandOutcome } from '../../../src/contracts/outcomes.js';
import { COMMAND_TOPICS, OUTCOME_TOPICS, TOPICS } from '../../../src/kafka/topics.js';
import { createLogger } from '../../../src/logger.js';
import { createPartnerClient, type PartnerClient } from '../../../src/partner/index.js';
import { createSandboxControl, startSandbox, type Sandbox } from '../../../src/dev/sandbox/index.js';
import type { SandboxControl } from '../../../src/dev/sandbox/control-client.js';
import { createTestDatabase, type TestDatabase } from '../../support/db.js';
import { createTestKafka, type TestKafka } from '../../support/kafka.js';

/** Every command type's topics, its dead letters' and its outcomes' (from the list of command types). */
export const COMMAND_TOPICS_ALL = [...COMMAND_TOPICS, ...COMMAND_TOPICS.map(TOPICS.dlq), ...OUTCOME_TOPICS];

export interface Received {
  topic: string;
  partition: number;
  message: KafkaMessage;
}

/** Reads topics in the background from the beginning; tests wait for what they expect. */
export interface Collector {
  all: Received[];
  waitFor(predicate: (r: Received) => boolean, count?: number, timeoutMs?: number): Promise<Received[]>;
}

export function headersOf(headers: IHeaders | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers ?? {})) {
    const one = Array.isArray(v) ? v[0] : v;
    if (one !== undefined) out[k] = one.toString();
  }
  return out;
}

export function outcomeOf(r: Received): CommandOutcome {
  return (JSON.parse(r.message.value!.toString()) as { data: CommandOutcome }).data;
}

export interface Harness {
  database: TestDatabase;
  kafka: TestKafka;
  sandbox: Sandbox;
  control: SandboxControl;
  partner: PartnerClient;
  producer: Producer;
  received: Collector;
  startConsumer<C>(spec: CommandType<C>, overrides?: Partial<CommandConsumerDeps>): Promise<CommandConsumer>;
  publish(
    logical: string,
    key: string,
    value: string | Buffer,
    headers?: Record<string, string>,
  ): Promise<void>;
  decision(command: Record<string, unknown>, headers?: Record<string, string>): Promise<string>;
  payment(command: Record<string, unknown>, headers?: Record<string, string>): Promise<string>;
  outcomesOf(commandId: string, count?: number): Promise<CommandOutcome[]>;
  deadLettersOf(commandId: string, count?: number): Promise<Received[]>;
  /** Ledger writes of one path, applied or not. */
  writesTo(path: string): Promise<Array<{ applied: boolean; status: number | null; request_id: string }>>;
  close(): Promise<void>;
}

export const logger = createLogger({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });

/**
 * The processing bound of these tests: the sandbox abandons (503, not applied) a write still
 * unfinished after it, and the guard waits it out before concluding "not applied". Short, so
 * the tests stay fast; above the client's time-out (1500 ms), so late writes exist.
 */
export const TEST_MAX_PROCESSING_MS = 3000;

export const FAST_GUARD = {
  backoffMs: 50,
  maxBackoffMs: 200,
  readBackDelayMs: 50,
  maxProcessingMs: TEST_MAX_PROCESSING_MS,
};

export async function createHarness(options: { timeoutMs?: number } = {}): Promise<Harness> {
  const database = await createTestDatabase();
  const kafka = createTestKafka();
  await kafka.createTopics(COMMAND_TOPICS_ALL);
  const sandbox = await startSandbox({ port: 0 });
  const control = createSandboxControl(sandbox.url);
  await control.setConfig({ max_processing_ms: TEST_MAX_PROCESSING_MS });
  const partner = createPartnerClient({
    baseUrl: sandbox.url,
    accessKey: 'sandbox-access-key',
    secretKey: 'sandbox-secret-key',
    timeoutMs: options.timeoutMs ?? 1500,
    logger,
  });
  const producer = kafka.kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();

  const all: Received[] = [];
  const watchers = new Set<() => void>();
  const reader: Consumer = kafka.kafka.consumer({ groupId: `test-${randomBytes(6).toString('hex')}` });
  await reader.connect();
  await reader.subscribe({
    topics: COMMAND_TOPICS_ALL.filter((t) => t.startsWith('outcomes.') || t.endsWith('.dlq')).map(
      (t) => `${kafka.prefix}${t}`,
    ),
    fromBeginning: true,
  });
  await reader.run({
    eachMessage: async ({ topic, partition, message }) => {
      all.push({ topic: topic.slice(kafka.prefix.length), partition, message });
      for (const w of watchers) w();
    },
  });
  const received: Collector = {
    all,
    waitFor(predicate, count = 1, timeoutMs = 45_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const hits = all.filter(predicate);
          if (hits.length >= count) {
            watchers.delete(check);
            clearTimeout(timer);
            resolve(hits);
          }
        };
        const timer = setTimeout(() => {
          watchers.delete(check);
          reject(
            new Error(`timed out waiting for ${count} message(s); have ${all.filter(predicate).length}`),
          );
        }, timeoutMs);
        watchers.add(check);
        check();
      });
    },
  };

  const consumers: CommandConsumer[] = [];
  const publish: Harness['publish'] = async (logical, key, value, headers) => {
    await producer.send({
      topic: `${kafka.prefix}${logical}`,
      messages: [{ key, value, ...(headers && { headers }) }],
    });
  };
  const commandEvent = (type: string, data: Record<string, unknown>, id: string) =>
    JSON.stringify(toCloudEvent({ id, source: '/test', type, data }));

  const harness: Harness = {
    database,
    kafka,
    sandbox,
    control,
    partner,
    producer,
    received,
    async startConsumer(spec, overrides = {}) {
      const consumer = createCommandConsumer(spec, {
        kafka: kafka.kafka,
        db: database.db,
        databaseUrl: database.url,
        partner,
        logger,
        topicPrefix: kafka.prefix,
        groupId: `rentbridge.${spec.name}.${randomBytes(4).toString('hex')}`,
        guard: FAST_GUARD,
        ...overrides,
      });
      consumers.push(consumer);
      await consumer.start();
      return consumer;
    },
    publish,
    async decision(command, headers) {
      const id = String(command.decision_id);
      await publish(
        TOPICS.applicationDecisions,
        String(command.application_id),
        commandEvent(COMMAND_TYPES.applicationDecision, command, id),
        headers,
      );
      return id;
    },
    async payment(command, headers) {
      const id = String(command.payment_id);
      await publish(
        TOPICS.rentalPayments,
        String(command.enrollment_id),
        commandEvent(COMMAND_TYPES.rentalPayment, command, id),
        headers,
      );
      return id;
    },
    async outcomesOf(commandId, count = 1) {
      const hits = await received.waitFor(
        (r) => r.topic.startsWith('outcomes.') && headersOf(r.message.headers)['command-id'] === commandId,
        count,
      );
      return hits.map(outcomeOf);
    },
    deadLettersOf(commandId, count = 1) {
      return received.waitFor(
        (r) => r.topic.endsWith('.dlq') && headersOf(r.message.headers)['dlq-command-id'] === commandId,
        count,
      );
    },
    async writesTo(path) {
      return (await control.ledger()).writes.filter((w) => w.path === path);
    },
    async close() {
      for (const c of consumers) await c.stop().catch(() => undefined);
      await reader.disconnect().catch(() => undefined);
      await producer.disconnect().catch(() => undefined);
      await kafka.close();
      await sandbox.close();
      await database.drop();
    },
  };
  return harness;
}

let seq = 0;
/** A unique command id per call (tests share one topic per file). */
export function uid(prefix: string): string {
  return `${prefix}-${Date.now().toString(36)}-${++seq}`;
}
