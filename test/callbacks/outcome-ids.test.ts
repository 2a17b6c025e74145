import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { deliveryOf } from '../../src/callbacks/callback-intake.js';
import { rentalPayments } from '../../src/command-types/rental-payments/rental-payments.js';
import { redriveDeadLetter } from '../../src/dead-letters/redrive.js';
import { toCloudEvent } from '../../src/contracts/cloudevent.js';
import { COMMAND_TYPES } from '../../src/contracts/command-contracts.js';
import { outcomeEventId } from '../../src/contracts/outcomes.js';
import { TOPICS } from '../../src/kafka/topics.js';
import { traceId } from '../../src/event-trace/trace.js';
import {
  FAST_GUARD,
  headersOf,
  logger,
  outcomeOf,
  uid,
  type Harness,
  type Received,
} from '../consumers/support/harness.js';
import { buildSecret } from '../receiver/webhooks.js';
import { useApp, type CallbackEndpoint } from '../support/app.js';
import { cloudEventOf } from '../support/contracts.js';
import { until } from './callback-receiver.js';

const REPORT = (id: number) => `/partner/v1/enrollments/${id}/report_rental_payments`;

/**
 * DESIGN.md, outcome callbacks: an outcome's CloudEvent id names the command and its result. The
 * same result published again (a redrive that ends as before) keeps its id on Kafka (read with the
 * CloudEvents SDK) and is one callback; a different result of the same command is a new id the
 * callbacks' intake delivers anew; a callback's webhook-id is the CloudEvent id.
 */
describe('outcome ids name the command and its result', () => {
  const secrets = { acme: [buildSecret()] };
  const app = useApp({
    harness: true,
    consumers: [rentalPayments],
    consumerOverrides: { guard: FAST_GUARD },
    callbacks: { secrets },
    deadLetterIndexer: true,
  });
  let h: Harness;
  let receiver: CallbackEndpoint;
  /** What a back-office that drops duplicates by CloudEvent id has taken in, in order. */
  const kept: Array<{ id: string; status: string }> = [];
  const seenIds = new Set<string>();

  beforeAll(() => {
    ({ harness: h, callbackEndpoint: receiver } = app);
  });

  /** The PMS's intake: a callback whose webhook-id was seen before is dropped. */
  function pmsIntake(): void {
    for (const r of receiver.received) {
      if (r.verifiedWith.length === 0) continue;
      const id = String(r.headers['webhook-id']);
      if (seenIds.has(id)) continue;
      seenIds.add(id);
      kept.push({ id, status: (JSON.parse(r.body) as { data: { status: string } }).data.status });
    }
  }

  const outcomesOn = (commandId: string) => (r: Received) =>
    r.topic.startsWith('outcomes.') && headersOf(r.message.headers)['command-id'] === commandId;

  it('an unverified payment: its id names the result; redelivered and redriven to the same result, the same id, dropped by a deduplicating PMS', async () => {
    const [record] = await h.control.addRecords('enrollments', [{ status: 'active', rental_payments: [] }]);
    const enrollment = Number(record!.id);
    // The write lands but its answer is a 500, and the platform shows no payments on the
    // enrollment: the guard cannot tell, the payment is parked unverified.
    await h.control.setConfig({ enrollment_payments_visible: false, report_moves_updated_at: false });
    await h.control.addFault({
      method: 'POST',
      path: REPORT(enrollment),
      kind: 'apply_then_error',
      status: 500,
    });
    const command = {
      payment_id: uid('pay'),
      enrollment_id: enrollment,
      amount_cents: 125_000,
      paid_on: '2026-11-01',
      period: '2026-11',
    };
    const id = command.payment_id;
    // A PMS's command (source acme, which has callbacks), as the receiver publishes it.
    const event = JSON.stringify(
      toCloudEvent({
        id: randomUUID(),
        source: '/webhooks/pms/acme',
        type: COMMAND_TYPES.rentalPayment,
        data: command,
      }),
    );
    await h.publish(TOPICS.rentalPayments, String(enrollment), event);
    const [parked] = await h.received.waitFor(outcomesOn(id));
    expect(outcomeOf(parked!).status).toBe('unverified');
    // Read back as an outside consumer would: the CloudEvents SDK's Kafka binding.
    const before = cloudEventOf(parked!.message);
    expect(before.id).toBe(outcomeEventId(id, 'unverified'));
    await until('the unverified callback', () => (pmsIntake(), kept.find((k) => k.status === 'unverified')));

    try {
      // Ops redrive the letter; the guard still cannot tell: unverified again, the same result,
      // the same id (the deduplicating PMS drops it).
      await h.control.clearFaults();
      const letterId = await until(
        'the indexed letter',
        async () => (await h.database.db.deadLetter.findFirst({ where: { commandId: id } }))?.id,
      );
      const deps = { db: h.database.db, producer: h.producer, topicPrefix: h.kafka.prefix, logger };
      await redriveDeadLetter(deps, Number(letterId), { actor: 'ops-test' });
      const [, again] = await h.received.waitFor(outcomesOn(id), 2);
      expect(outcomeOf(again!).status).toBe('unverified');
      expect(cloudEventOf(again!.message).id).toBe(before.id);
      // The callbacks' intake takes it for the delivery it already made: one delivery, one POST.
      await h.kafka.committedPast(app.callbacks.groupId, {
        topic: again!.topic,
        partition: again!.partition,
        offset: again!.message.offset,
      });
      const { rows: intake } = await h.database.sql.query<{ webhook_id: string }>(
        'SELECT webhook_id FROM callback_deliveries WHERE command_id = $1',
        [id],
      );
      expect(intake.map((r) => r.webhook_id)).toEqual([before.id]);
    } finally {
      await h.control.setConfig({ enrollment_payments_visible: true, report_moves_updated_at: true });
    }
    pmsIntake();
    expect(kept.filter((k) => k.id.includes(id))).toEqual([{ id: before.id, status: 'unverified' }]);
    // Every callback's webhook-id is its body's CloudEvent id.
    for (const r of receiver.received)
      expect(r.headers['webhook-id']).toBe((JSON.parse(r.body) as { id: string }).id);

    // The trace names the outcome id of the result.
    const trace = await traceId(h.database.db, id, { topicPrefix: h.kafka.prefix, retentionHours: 72 });
    expect(trace.steps.find((s) => s.stage === 'outcome')?.what).toContain(`outcome ${before.id} published`);
  });

  it('an outcome first published by 0.1.0 as `outcome.<base>` keeps that id when this version publishes the same result again; another result gets a new id', async () => {
    const [record] = await h.control.addRecords('enrollments', [{ status: 'active', rental_payments: [] }]);
    const enrollment = Number(record!.id);
    // The write lands, its answer is a 500 and the platform hides the payment: parked unverified.
    await h.control.setConfig({ enrollment_payments_visible: false, report_moves_updated_at: false });
    await h.control.addFault({
      method: 'POST',
      path: REPORT(enrollment),
      kind: 'apply_then_error',
      status: 500,
    });
    const id = uid('pay');
    const event = JSON.stringify(
      toCloudEvent({
        id: randomUUID(),
        source: '/webhooks/pms/acme',
        type: COMMAND_TYPES.rentalPayment,
        data: {
          payment_id: id,
          enrollment_id: enrollment,
          amount_cents: 125_001,
          paid_on: '2026-11-01',
          period: '2026-11',
        },
      }),
    );
    try {
      await h.publish(TOPICS.rentalPayments, String(enrollment), event);
      await h.received.waitFor(outcomesOn(id));
      // What 0.1.0 left behind when it published this outcome (as `outcome.<base>`): the outcome
      // on the command's row, without the id it went out under (that release had no such column).
      const legacy = `outcome.${id}`;
      await h.database.sql.query(`UPDATE commands SET outcome_id = NULL WHERE command_id = $1`, [id]);
      await h.control.clearFaults();
      const letterId = await until(
        'the indexed letter',
        async () => (await h.database.db.deadLetter.findFirst({ where: { commandId: id } }))?.id,
      );
      const deps = { db: h.database.db, producer: h.producer, topicPrefix: h.kafka.prefix, logger };
      // Redriven, still unverified: the same result, published again under the id it first had.
      await redriveDeadLetter(deps, Number(letterId), { actor: 'ops-test' });
      const [, again] = await h.received.waitFor(outcomesOn(id), 2);
      expect(outcomeOf(again!).status).toBe('unverified');
      expect(cloudEventOf(again!.message).id).toBe(legacy);
      // The platform now shows the payment: redriven again, applied, a result 0.1.0 never published.
      await h.control.setConfig({ enrollment_payments_visible: true, report_moves_updated_at: true });
      await h.database.sql.query(`UPDATE dead_letters SET state = 'open' WHERE id = $1`, [letterId]);
      await redriveDeadLetter(deps, Number(letterId), { actor: 'ops-test' });
      const [, , applied] = await h.received.waitFor(outcomesOn(id), 3);
      expect(outcomeOf(applied!).status).toBe('applied');
      expect(cloudEventOf(applied!.message).id).toBe(outcomeEventId(id, 'applied'));
    } finally {
      await h.control.clearFaults();
      await h.control.setConfig({ enrollment_payments_visible: true, report_moves_updated_at: true });
    }
  });

  it('a command whose result changes from unverified to applied: a new id, a new callback the PMS keeps', () => {
    // The callbacks' intake reads each outcome as published: one command, two results.
    const outcome = (status: string) => ({
      key: Buffer.from('1'),
      value: Buffer.from(
        JSON.stringify({
          specversion: '1.0',
          id: outcomeEventId('pay-7', status),
          source: '/consumers/rental-payments',
          type: 'rentbridge.outcome.rental-payment',
          time: new Date().toISOString(),
          data: { command_source: 'acme', command_type: 'rental_payment', command_id: 'pay-7', status },
        }),
      ),
      headers: {},
      timestamp: String(Date.now()),
      attributes: 0,
      offset: '0',
    });
    const sources = new Set(['acme']);
    const unverified = deliveryOf(outcome('unverified'), sources, 60_000)!;
    const applied = deliveryOf(outcome('applied'), sources, 60_000)!;
    expect(unverified.webhookId).toBe('outcome.pay-7.unverified');
    expect(applied.webhookId).toBe('outcome.pay-7.applied');
    expect(applied.webhookId).toBe(applied.eventId);
    // An outcome published before ids named their result keeps the webhook-id it was delivered under.
    const old = outcome('applied');
    old.value = Buffer.from(old.value.toString().replace('outcome.pay-7.applied', 'outcome.pay-7'));
    expect(deliveryOf(old, sources, 60_000)!.webhookId).toBe('outcome.pay-7.applied');
  });
});
