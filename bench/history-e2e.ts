/**
 * The command path end to end for `npm run bench -- history`: a signed PMS `application.decided`
 * webhook to the receiver → its outbox → the relay → Kafka → the application-decisions consumer
 * (the guard's rows, the Partner write to the sandbox) → the outcome on Kafka. The roles run as
 * their own processes (`rentbridge receiver`, `relay`, `consumer application-decisions`) against
 * the bench's schema, so the figure includes every table the path touches at that schema's size.
 *
 * One command at a time: the latency of each is from just before its webhook is sent to its
 * outcome's Kafka timestamp. The bench runs one such deployment on each schema (the first day and
 * the year) and sends a command to each in turn, so both carry the same load and the same last
 * hour of traffic. The relay's retention is set beyond the fill's year, so nothing is pruned under
 * the measurement.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Kafka, logLevel } from 'kafkajs';
import { Webhook } from 'standardwebhooks';
import { ensureTopics, TOPICS } from '../src/kafka/topics.js';
import { createSandboxControl, startSandbox } from '../src/dev/sandbox/index.js';

const CLI = fileURLToPath(new URL('../src/cli/main.ts', import.meta.url));
const TSX = fileURLToPath(new URL('../node_modules/.bin/tsx', import.meta.url));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Every retention beyond the fill's year: the relay prunes nothing while the path is measured. */
const KEEP_ALL = Object.fromEntries(
  [
    'COMMAND',
    'COMMAND_ATTEMPT',
    'PUBLISHED_VERSION',
    'KNOWN_RECORD',
    'DEAD_LETTER',
    'AUDIT',
    'CALLBACK',
    'CALLBACK_ATTEMPT',
    'SNAPSHOT_READ',
  ].map((k) => [`${k}_RETENTION_DAYS`, '3650']),
);

export interface EndToEnd {
  /** Two commands unmeasured: after a pause (the fill), the roles' pools and the group settle. */
  settle(): Promise<void>;
  /** One command: its webhook → outcome in ms, or null when its outcome never came (30 s). */
  sample(): Promise<number | null>;
  stop(): Promise<void>;
}

interface Role {
  stop(): Promise<void>;
}

function startRole(env: NodeJS.ProcessEnv, args: string[], errors: string[]): Role {
  // At the bench's own priority (run it niced: the roles inherit it).
  const child: ChildProcess = spawn(TSX, [CLI, ...args], {
    env,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  child.stderr!.on('data', (chunk: Buffer) => {
    if (errors.length < 5) errors.push(`${args.join(' ')}: ${chunk.toString().slice(0, 300)}`);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/**
 * Starts the sandbox (in this process), the three roles and an outcome reader; `port` is the
 * receiver's. Enough submitted applications are seeded for `commands` decisions.
 */
export async function startEndToEnd(options: {
  databaseUrl: string;
  brokers: string;
  port: number;
  commands: number;
}): Promise<EndToEnd> {
  const prefix = `history.e2e${randomBytes(3).toString('hex')}.`;
  const kafka = new Kafka({
    clientId: 'bench-history',
    brokers: options.brokers.split(','),
    logLevel: logLevel.NOTHING,
  });
  const admin = kafka.admin();
  await admin.connect();
  await ensureTopics(admin, { prefix, partitions: 1 });

  const sandbox = await startSandbox({ port: 0 });
  const control = createSandboxControl(sandbox.url);
  await control.setConfig({ rate_limit_per_minute: 100_000 });
  const applications = (
    await control.addRecords(
      'applications',
      Array.from({ length: options.commands }, () => ({ status: 'submitted' })),
    )
  ).map((r) => String(r.id));

  const outcomes = new Map<string, number>();
  const reader = kafka.consumer({ groupId: `bench-history-${randomBytes(4).toString('hex')}` });
  await reader.connect();
  await reader.subscribe({ topic: `${prefix}${TOPICS.applicationDecisionOutcomes}`, fromBeginning: true });
  await reader.run({
    eachMessage: async ({ message }) => {
      const event = JSON.parse(message.value!.toString()) as { data: { command_id: string } };
      outcomes.set(event.data.command_id, Number(message.timestamp));
    },
  });

  const secret = `whsec_${randomBytes(24).toString('base64')}`;
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    ...KEEP_ALL,
    DATABASE_URL: options.databaseUrl,
    KAFKA_BROKERS: options.brokers,
    KAFKA_TOPIC_PREFIX: prefix,
    PARTNER_API_URL: sandbox.url,
    PARTNER_RATE_LIMIT_PER_MINUTE: '100000',
    PMS_WEBHOOK_SECRETS: JSON.stringify({ acme: [secret] }),
    LOG_LEVEL: 'warn',
  };
  const errors: string[] = [];
  const roles = [
    startRole({ ...env, HTTP_PORT: String(options.port) }, ['receiver'], errors),
    startRole({ ...env, HTTP_PORT: '0' }, ['relay'], errors),
    startRole({ ...env, HTTP_PORT: '0' }, ['consumer', 'application-decisions'], errors),
  ];
  const receiverUrl = `http://127.0.0.1:${options.port}`;
  const signer = new Webhook(secret);

  async function one(timeoutMs: number): Promise<number | null> {
    const applicationId = applications.shift();
    if (!applicationId) throw new Error('bench history: out of seeded applications');
    const decisionId = `bench-e2e-${randomUUID()}`;
    const id = `msg_${randomUUID()}`;
    const body = JSON.stringify({
      type: 'application.decided',
      data: { decision_id: decisionId, application_id: applicationId, decision: 'approve' },
    });
    const sentAt = Date.now();
    const now = new Date(sentAt);
    const res = await fetch(`${receiverUrl}/webhooks/pms/acme`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'webhook-id': id,
        'webhook-timestamp': String(Math.floor(sentAt / 1000)),
        'webhook-signature': signer.sign(id, now, body),
      },
      body,
    });
    if (res.status >= 300) throw new Error(`receiver answered ${res.status}: ${await res.text()}`);
    const deadline = sentAt + timeoutMs;
    while (!outcomes.has(decisionId) && Date.now() < deadline) await sleep(5);
    const at = outcomes.get(decisionId);
    return at === undefined ? null : at - sentAt;
  }

  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    for (const role of roles.reverse()) await role.stop();
    await reader.disconnect();
    await sandbox.close();
    const mine = (await admin.listTopics()).filter((t) => t.startsWith(prefix));
    await admin.deleteTopics({ topics: mine }).catch(() => undefined);
    await admin.disconnect();
  };

  try {
    for (let i = 0; ; i++) {
      const ok = await fetch(`${receiverUrl}/healthz`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) break;
      if (i > 240) throw new Error(`receiver did not start: ${errors.join('\n')}`);
      await sleep(500);
    }
    // Warm-up: the consumer has joined its group once an outcome comes back.
    if ((await one(180_000)) === null) throw new Error(`no outcome in warm-up: ${errors.join('\n')}`);
  } catch (error) {
    await stop();
    throw error;
  }

  return {
    async settle() {
      for (let i = 0; i < 2; i++) await one(60_000);
    },
    sample: () => one(30_000),
    stop,
  };
}
