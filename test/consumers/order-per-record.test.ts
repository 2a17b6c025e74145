import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { applicationDecisions } from '../../src/command-types/application-decisions/application-decisions.js';
import { rentalPayments } from '../../src/command-types/rental-payments/rental-payments.js';
import type { CommandConsumer } from '../../src/command-consumer/command-consumer.js';
import { toCloudEvent } from '../../src/contracts/cloudevent.js';
import { COMMAND_TYPES } from '../../src/contracts/command-contracts.js';
import { TOPICS } from '../../src/kafka/topics.js';
import { FAST_GUARD, createHarness, headersOf, uid, type Harness } from './support/harness.js';

/**
 * Issue 52 item 1 (decision 054): order per target record, not per partition. Every command here
 * goes to ONE partition, so under the old loop (one command per partition at a time) each would
 * wait for the one before it. A slow record (a delay fault in the sandbox) now holds only its own
 * later commands: the other records' commands overtake it, its own are applied in arrival order,
 * and the committed offset never passes a command not yet final, so a consumer killed with many
 * records open applies each command once after a restart.
 */

const REPORT = (id: number) => `/partner/v1/enrollments/${id}/report_rental_payments`;
const APPROVE = (id: number) => `/partner/v1/applications/${id}/approve`;
const DECLINE = (id: number) => `/partner/v1/applications/${id}/decline`;
/** Writes held by a delay fault land before this bound (the sandbox applies them), never after. */
const MAX_PROCESSING_MS = 15_000;
const GUARD = { ...FAST_GUARD, maxProcessingMs: MAX_PROCESSING_MS };

describe('a command consumer keeps order per record, not per partition', () => {
  let h: Harness;
  const running: CommandConsumer[] = [];
  let child: ChildProcess | undefined;

  beforeAll(async () => {
    // The client waits out the delay faults below: a slow record, not a failed one.
    h = await createHarness({ timeoutMs: 10_000 });
  });
  afterEach(async () => {
    child?.kill('SIGKILL');
    child = undefined;
    for (const c of running.splice(0)) await c.stop();
    await h.control.reset();
  });
  afterAll(async () => {
    await h?.close();
  });

  /** Publishes a command to partition 0 of its topic; answers its offset. */
  async function publish(
    topic: string,
    type: string,
    data: Record<string, unknown>,
    id: string,
    key: string,
  ) {
    const [meta] = await h.producer.send({
      topic: `${h.kafka.prefix}${topic}`,
      messages: [
        { key, partition: 0, value: JSON.stringify(toCloudEvent({ id, source: '/test', type, data })) },
      ],
    });
    return BigInt(meta!.baseOffset!);
  }
  async function payment(enrollment: number, amount: number) {
    const id = uid('pay');
    const data = { payment_id: id, enrollment_id: enrollment, amount_cents: amount, paid_on: '2026-11-02' };
    const offset = await publish(
      TOPICS.rentalPayments,
      COMMAND_TYPES.rentalPayment,
      data,
      id,
      String(enrollment),
    );
    return { id, offset, enrollment };
  }
  async function decision(application: number, verdict: 'approve' | 'decline') {
    const id = uid('dec');
    const data = { decision_id: id, application_id: application, decision: verdict };
    await publish(
      TOPICS.applicationDecisions,
      COMMAND_TYPES.applicationDecision,
      data,
      id,
      String(application),
    );
    return id;
  }
  async function enrollments(n: number): Promise<number[]> {
    const records = await h.control.addRecords(
      'enrollments',
      Array.from({ length: n }, () => ({ status: 'active', rental_payments: [] })),
    );
    return records.map((r) => Number(r.id));
  }
  /** Where each command's first outcome arrived among everything received. */
  const outcomeIndex = (id: string) =>
    h.received.all.findIndex(
      (r) => r.topic.startsWith('outcomes.') && headersOf(r.message.headers)['command-id'] === id,
    );

  it('lets other records overtake a slow one in the same partition, and applies its payments in arrival order', async () => {
    await h.control.setConfig({ max_processing_ms: MAX_PROCESSING_MS });
    running.push(await h.startConsumer(rentalPayments, { guard: GUARD, concurrency: 4 }));
    const [slow, ...others] = await enrollments(7);
    await h.control.addFault({
      method: 'POST',
      path: REPORT(slow!),
      kind: 'delay',
      delay_ms: 5000,
      times: 1,
    });
    const first = await payment(slow!, 101);
    const overtaking = [];
    for (const [i, e] of others.entries()) overtaking.push(await payment(e, 200 + i));
    const second = await payment(slow!, 102);
    const third = await payment(slow!, 103);

    for (const p of [...overtaking, first, second, third])
      expect((await h.outcomesOf(p.id))[0]?.status).toBe('applied');
    // Published after the slow record's first payment, in its partition, done before it.
    for (const p of overtaking) expect(outcomeIndex(p.id)).toBeLessThan(outcomeIndex(first.id));
    // The slow record's own payments: one at a time, in arrival order, each reported once.
    expect(outcomeIndex(first.id)).toBeLessThan(outcomeIndex(second.id));
    expect(outcomeIndex(second.id)).toBeLessThan(outcomeIndex(third.id));
    const writes = await h.writesTo(REPORT(slow!));
    expect(writes.map((w) => w.applied)).toEqual([true, true, true]);
    const record = (await h.control.records('enrollments')).find((r) => r.id === slow);
    const amounts = (record?.rental_payments as Array<{ amount_cents: number }>).map((p) => p.amount_cents);
    expect(amounts).toEqual([101, 102, 103]);
  });

  it('applies two decisions for one application in arrival order while other applications overtake them', async () => {
    await h.control.setConfig({ max_processing_ms: MAX_PROCESSING_MS });
    running.push(await h.startConsumer(applicationDecisions, { guard: GUARD, concurrency: 4 }));
    const apps = await h.control.addRecords(
      'applications',
      Array.from({ length: 5 }, () => ({ status: 'submitted' })),
    );
    const [slow, ...others] = apps.map((a) => Number(a.id));
    await h.control.addFault({
      method: 'POST',
      path: APPROVE(slow!),
      kind: 'delay',
      delay_ms: 5000,
      times: 1,
    });
    const approve = await decision(slow!, 'approve');
    const overtaking = [];
    for (const app of others) overtaking.push(await decision(app, 'approve'));
    // Run before the approval, it would decline the application; after it, it is refused.
    const decline = await decision(slow!, 'decline');

    for (const id of overtaking) expect((await h.outcomesOf(id))[0]?.status).toBe('applied');
    expect((await h.outcomesOf(approve))[0]?.status).toBe('applied');
    expect((await h.outcomesOf(decline))[0]?.status).toBe('rejected');
    for (const id of overtaking) expect(outcomeIndex(id)).toBeLessThan(outcomeIndex(approve));
    expect((await h.writesTo(APPROVE(slow!))).filter((w) => w.applied)).toHaveLength(1);
    expect((await h.writesTo(DECLINE(slow!))).filter((w) => w.applied)).toHaveLength(0);
  });

  it('killed with many records open, commits no offset past an unfinished command and, restarted, applies each once', async () => {
    await h.control.setConfig({ max_processing_ms: MAX_PROCESSING_MS });
    const groupId = `rentbridge.rental-payments.${randomBytes(4).toString('hex')}`;
    child = spawn(process.execPath, ['--import', 'tsx', 'test/consumers/support/consumer-process.ts'], {
      env: {
        ...process.env,
        DATABASE_URL: h.database.url,
        KAFKA_BROKERS: h.kafka.brokers.join(','),
        KAFKA_TOPIC_PREFIX: h.kafka.prefix,
        PARTNER_API_URL: h.sandbox.url,
        GROUP_ID: groupId,
        COMMAND_TYPE: 'rental-payments',
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    await new Promise<void>((resolve, reject) => {
      child!.stdout!.on('data', (chunk: Buffer) => chunk.toString().includes('ready') && resolve());
      child!.once('exit', (code) => reject(new Error(`consumer process exited with ${code}`)));
    });
    const targets = await enrollments(16);
    const slow = targets.slice(0, 4);
    for (const e of slow)
      await h.control.addFault({ method: 'POST', path: REPORT(e), kind: 'delay', delay_ms: 8000, times: 1 });
    // Interleaved: slow records' payments, then the fast ones' after them in the partition.
    const payments = [];
    for (const e of targets) payments.push(await payment(e, 500));
    const fast = payments.filter((p) => !slow.includes(p.enrollment));
    const open = payments.filter((p) => slow.includes(p.enrollment));

    // Kill once every fast payment is final and every slow one's write is held by the sandbox.
    for (const p of fast) expect((await h.outcomesOf(p.id))[0]?.status).toBe('applied');
    await expect
      .poll(async () => (await h.control.faults()).length, { timeout: 10_000, interval: 20 })
      .toBe(0);
    const states = async () => {
      const { rows } = await h.database.sql.query<{ command_id: string; state: string }>(
        'SELECT command_id, state FROM commands WHERE command_id = ANY($1)',
        [open.map((p) => p.id)],
      );
      return rows.map((r) => r.state);
    };
    expect(await states()).toEqual(open.map(() => 'in_flight'));
    child.kill('SIGKILL');
    await new Promise((r) => child!.once('exit', r));
    child = undefined;

    // The fast payments after the slow ones were final, yet the offset stays at the oldest open one.
    const admin = h.kafka.kafka.admin();
    await admin.connect();
    const [committed] = await admin.fetchOffsets({
      groupId,
      topics: [`${h.kafka.prefix}${TOPICS.rentalPayments}`],
    });
    await admin.disconnect();
    const offset = BigInt(committed!.partitions.find((p) => p.partition === 0)!.offset);
    const oldestOpen = open.map((p) => p.offset).reduce((a, b) => (a < b ? a : b));
    expect(offset).toBeLessThanOrEqual(oldestOpen);

    running.push(await h.startConsumer(rentalPayments, { groupId, guard: GUARD, sessionTimeoutMs: 6000 }));
    for (const p of open) expect((await h.outcomesOf(p.id))[0]?.status).toBe('applied');
    // Each payment reported once, though the fast ones past the committed offset were read again.
    const applied = new Map<string, number>();
    for (const w of (await h.control.ledger()).writes)
      if (w.applied) applied.set(w.path, (applied.get(w.path) ?? 0) + 1);
    expect(targets.map((e) => applied.get(REPORT(e)) ?? 0)).toEqual(targets.map(() => 1));
  });

  it('rebalanced while records are open (a second member joins), applies each payment once', async () => {
    await h.control.setConfig({ max_processing_ms: MAX_PROCESSING_MS });
    const groupId = `rentbridge.rental-payments.${randomBytes(4).toString('hex')}`;
    running.push(await h.startConsumer(rentalPayments, { groupId, guard: GUARD, sessionTimeoutMs: 6000 }));
    const targets = await enrollments(12);
    const slow = targets.slice(0, 3);
    for (const e of slow)
      await h.control.addFault({ method: 'POST', path: REPORT(e), kind: 'delay', delay_ms: 4000, times: 1 });
    // Spread over the partitions by their keys, as the receiver publishes them.
    const ids: string[] = [];
    for (const e of targets)
      ids.push(
        await h.payment({
          payment_id: uid('reb'),
          enrollment_id: e,
          amount_cents: 700,
          paid_on: '2026-11-02',
        }),
      );
    // The slow writes are held by the sandbox when the group rebalances.
    await expect
      .poll(async () => (await h.control.faults()).length, { timeout: 10_000, interval: 20 })
      .toBe(0);
    running.push(await h.startConsumer(rentalPayments, { groupId, guard: GUARD, sessionTimeoutMs: 6000 }));

    for (const id of ids) expect((await h.outcomesOf(id))[0]?.status).toBe('applied');
    const applied = new Map<string, number>();
    for (const w of (await h.control.ledger()).writes)
      if (w.applied) applied.set(w.path, (applied.get(w.path) ?? 0) + 1);
    expect(targets.map((e) => applied.get(REPORT(e)) ?? 0)).toEqual(targets.map(() => 1));
  });
});
