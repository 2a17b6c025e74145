import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applicationDecisions } from '../../src/commands/application-decisions.js';
import { TOPICS } from '../../src/kafka/topics.js';
import { createHarness, headersOf, uid, type Harness } from './support/harness.js';

const APPROVE = (id: number) => `/partner/v1/applications/${id}/approve`;

describe('application-decisions consumer', () => {
  let h: Harness;

  beforeAll(async () => {
    h = await createHarness();
    await h.startConsumer(applicationDecisions);
  });
  afterAll(async () => {
    await h?.close();
  });

  async function newApplication(status = 'submitted'): Promise<number> {
    const [record] = await h.control.addRecords('applications', [{ status }]);
    return Number(record!.id);
  }

  async function applied(path: string): Promise<number> {
    return (await h.writesTo(path)).filter((w) => w.applied).length;
  }

  describe('when the write succeeds', () => {
    it('approves the application once and publishes an applied outcome', async () => {
      const app = await newApplication();
      const id = await h.decision({ decision_id: uid('ok'), application_id: app, decision: 'approve' });
      const [outcome] = await h.outcomesOf(id);
      expect(outcome).toMatchObject({
        command_id: id,
        command_type: 'application_decision',
        target_id: String(app),
        status: 'applied',
        attempts: 1,
        partner_request_ids: [`${id}.a1`],
      });
      const writes = await h.writesTo(APPROVE(app));
      expect(writes.map((w) => [w.applied, w.request_id])).toEqual([[true, `${id}.a1`]]);
      const [record] = (await h.control.records('applications')).filter((r) => r.id === app);
      expect(record?.status).toBe('approved');
    });
  });

  describe('when the write is applied but answered with a 500', () => {
    it('reads back, finds it applied and never writes again', async () => {
      const app = await newApplication();
      await h.control.addFault({ method: 'POST', path: APPROVE(app), kind: 'apply_then_error', status: 500 });
      const id = await h.decision({ decision_id: uid('ate'), application_id: app, decision: 'approve' });
      const [outcome] = await h.outcomesOf(id);
      expect(outcome).toMatchObject({ status: 'applied', attempts: 1 });
      expect(await h.writesTo(APPROVE(app))).toHaveLength(1);
      expect(await applied(APPROVE(app))).toBe(1);
    });
  });

  describe('when the write is applied but never answered', () => {
    it('times out, reads back, finds it applied and never writes again', async () => {
      const app = await newApplication();
      await h.control.addFault({ method: 'POST', path: APPROVE(app), kind: 'apply_then_timeout' });
      const id = await h.decision({ decision_id: uid('att'), application_id: app, decision: 'approve' });
      const [outcome] = await h.outcomesOf(id);
      expect(outcome).toMatchObject({ status: 'applied', attempts: 1 });
      expect(await h.writesTo(APPROVE(app))).toHaveLength(1);
    });
  });

  describe('when the write fails with a 503 and was not applied', () => {
    it('reads back, proves it not applied, retries and applies it once', async () => {
      const app = await newApplication();
      await h.control.addFault({
        method: 'POST',
        path: APPROVE(app),
        kind: 'error',
        status: 503,
        code: 'request_timeout',
      });
      const id = await h.decision({ decision_id: uid('503'), application_id: app, decision: 'approve' });
      const [outcome] = await h.outcomesOf(id);
      expect(outcome).toMatchObject({
        status: 'applied',
        attempts: 2,
        partner_request_ids: [`${id}.a1`, `${id}.a2`],
      });
      const writes = await h.writesTo(APPROVE(app));
      expect(writes.map((w) => [w.applied, w.status])).toEqual([
        [false, 503],
        [true, 200],
      ]);
    });
  });

  describe('when every write fails with a 503 and none was applied', () => {
    it('stops after the bounded retries as exhausted and dead-letters it', async () => {
      const app = await newApplication();
      await h.control.addFault({
        method: 'POST',
        path: APPROVE(app),
        kind: 'error',
        status: 503,
        code: 'request_timeout',
        times: 50,
      });
      const id = await h.decision({ decision_id: uid('exh'), application_id: app, decision: 'approve' });
      const [outcome] = await h.outcomesOf(id);
      // Five retries after the first write, each after a read-back proved it not applied.
      expect(outcome).toMatchObject({ status: 'exhausted', attempts: 6, error: { status: 503 } });
      const [letter] = await h.deadLettersOf(id);
      expect(headersOf(letter!.message.headers)).toMatchObject({
        'dlq-reason': 'exhausted',
        'dlq-attempts': '6',
      });
      expect(await applied(APPROVE(app))).toBe(0);
      await h.control.clearFaults();
    });
  });

  describe('when the write meets 409 lock_failed', () => {
    it('reads again and retries until it is applied', async () => {
      const app = await newApplication();
      await h.control.addFault({
        method: 'POST',
        path: APPROVE(app),
        kind: 'error',
        status: 409,
        code: 'lock_failed',
        times: 2,
      });
      const id = await h.decision({ decision_id: uid('lock'), application_id: app, decision: 'approve' });
      const [outcome] = await h.outcomesOf(id);
      expect(outcome).toMatchObject({ status: 'applied', attempts: 3 });
      expect(await applied(APPROVE(app))).toBe(1);
    });
  });

  describe('when the application was already approved by a success the consumer never saw', () => {
    it('settles the 409 invalid_state_transition as already_applied', async () => {
      const app = await newApplication('approved');
      const id = await h.decision({ decision_id: uid('ias'), application_id: app, decision: 'approve' });
      const [outcome] = await h.outcomesOf(id);
      expect(outcome).toMatchObject({ status: 'already_applied', attempts: 1 });
      expect(await applied(APPROVE(app))).toBe(0);
    });
  });

  describe('when the application was approved on an earlier day', () => {
    it('settles the 409 invalid_state_transition as already_applied, not rejected', async () => {
      const threeDaysAgo = new Date(Date.now() - 3 * 86_400_000).toISOString();
      const [record] = await h.control.addRecords('applications', [
        { status: 'approved', updated_at: threeDaysAgo },
      ]);
      const app = Number(record!.id);
      const id = await h.decision({ decision_id: uid('old'), application_id: app, decision: 'approve' });
      const [outcome] = await h.outcomesOf(id);
      expect(outcome).toMatchObject({ status: 'already_applied', attempts: 1 });
      expect(await applied(APPROVE(app))).toBe(0);
    });
  });

  describe('when an approval lands after the client has timed out, within the processing bound', () => {
    it('waits for the bound before concluding and never approves again', async () => {
      const app = await newApplication();
      // The client gives up at 1.5 s; the sandbox applies the write at 2.5 s (its bound is 3 s).
      await h.control.addFault({ method: 'POST', path: APPROVE(app), kind: 'delay', delay_ms: 2500 });
      const id = await h.decision({ decision_id: uid('late'), application_id: app, decision: 'approve' });
      const [outcome] = await h.outcomesOf(id);
      expect(outcome).toMatchObject({ status: 'applied', attempts: 1 });
      expect((await h.writesTo(APPROVE(app))).map((w) => w.applied)).toEqual([true]);
    });
  });

  describe('when an approval is delayed past the processing bound', () => {
    it('is not applied by the platform; the guard writes again once the bound has passed', async () => {
      const app = await newApplication();
      await h.control.addFault({ method: 'POST', path: APPROVE(app), kind: 'delay', delay_ms: 5000 });
      const id = await h.decision({ decision_id: uid('past'), application_id: app, decision: 'approve' });
      const [outcome] = await h.outcomesOf(id);
      expect(outcome).toMatchObject({ status: 'applied', attempts: 2 });
      expect((await h.writesTo(APPROVE(app))).map((w) => [w.applied, w.status])).toEqual([
        [false, 503],
        [true, 200],
      ]);
    });
  });

  describe('when the read-back meets a record of a shape it does not recognise', () => {
    it('never concludes not applied: parks the decision as unverified, saying why', async () => {
      const app = await newApplication();
      await h.control.addFault({ method: 'POST', path: APPROVE(app), kind: 'error', status: 500 });
      const id = await h.decision({ decision_id: uid('shape'), application_id: app, decision: 'approve' });
      for (let i = 0; i < 100 && (await h.writesTo(APPROVE(app))).length === 0; i++) {
        await new Promise((r) => setTimeout(r, 20));
      }
      // A status the client's schema refuses: every read of the list fails its shape check.
      await h.control.patchRecord('applications', app, { status: null });
      try {
        const [outcome] = await h.outcomesOf(id);
        expect(outcome).toMatchObject({ status: 'unverified', attempts: 1, error: { status: 500 } });
        expect(outcome!.error!.message).toMatch(/shape is not recognised/);
        expect(await h.writesTo(APPROVE(app))).toHaveLength(1);
      } finally {
        await h.control.deleteRecord('applications', app);
      }
    });
  });

  describe('when the application cannot take the decision', () => {
    it('settles the 409 as rejected and dead-letters it', async () => {
      const app = await newApplication('declined');
      const id = await h.decision({ decision_id: uid('rej409'), application_id: app, decision: 'approve' });
      const [outcome] = await h.outcomesOf(id);
      expect(outcome).toMatchObject({
        status: 'rejected',
        error: { code: 'invalid_state_transition', status: 409 },
      });
      const [letter] = await h.deadLettersOf(id);
      expect(headersOf(letter!.message.headers)['dlq-reason']).toBe('rejected');
    });
  });

  describe('when the application does not exist', () => {
    it('publishes a rejected outcome and a dead letter carrying where it came from and why', async () => {
      const id = uid('404');
      const value = JSON.stringify({
        specversion: '1.0',
        id,
        source: '/test',
        type: 'rentbridge.command.application-decision',
        data: { decision_id: id, application_id: '999999', decision: 'decline', reason: 'no' },
      });
      await h.publish(TOPICS.applicationDecisions, '999999', value);
      const [outcome] = await h.outcomesOf(id);
      expect(outcome).toMatchObject({
        status: 'rejected',
        attempts: 1,
        error: { code: 'not_found', status: 404 },
      });
      const [letter] = await h.deadLettersOf(id);
      expect(letter!.message.value!.toString()).toBe(value);
      expect(letter!.message.key!.toString()).toBe('999999');
      const headers = headersOf(letter!.message.headers);
      expect(headers).toMatchObject({
        'dlq-reason': 'rejected',
        'dlq-original-topic': `${h.kafka.prefix}${TOPICS.applicationDecisions}`,
        'dlq-original-key': '999999',
        'dlq-error-code': 'not_found',
        'dlq-error-status': '404',
        'dlq-attempts': '1',
        'dlq-partner-request-ids': `${id}.a1`,
        'dlq-command-id': id,
      });
      expect(headers['dlq-consumer-group']).toMatch(/^rentbridge\.application-decisions/);
      expect(headers['dlq-original-offset']).toMatch(/^\d+$/);
      expect(headers['dlq-first-failure-at']).toBeTruthy();
    });
  });

  describe('when a message is not a valid command', () => {
    it('dead-letters it at once as invalid_message, byte for byte', async () => {
      const key = uid('bad');
      await h.publish(TOPICS.applicationDecisions, key, '{not json');
      const [letter] = await h.received.waitFor(
        (r) => r.topic.endsWith('.dlq') && r.message.key?.toString() === key,
      );
      expect(letter!.message.value!.toString()).toBe('{not json');
      expect(headersOf(letter!.message.headers)).toMatchObject({
        'dlq-reason': 'invalid_message',
        'dlq-attempts': '0',
        'dlq-original-key': key,
      });
    });

    it('dead-letters a CloudEvent whose command fails its schema, and keeps consuming', async () => {
      const id = uid('schema');
      await h.decision({ decision_id: id, application_id: 1, decision: 'maybe' });
      const [letter] = await h.deadLettersOf(id);
      expect(headersOf(letter!.message.headers)['dlq-reason']).toBe('invalid_message');
      const app = await newApplication();
      const next = await h.decision({ decision_id: uid('after'), application_id: app, decision: 'approve' });
      expect((await h.outcomesOf(next))[0]?.status).toBe('applied');
    });
  });

  describe('when a command carries an unknown CloudEvent type', () => {
    it('dead-letters it as invalid_message and still publishes a rejected outcome', async () => {
      const id = uid('type');
      const value = JSON.stringify({
        specversion: '1.0',
        id,
        source: '/test',
        type: 'rentbridge.command.application-decision.v2',
        data: { decision_id: id, application_id: '17', decision: 'approve' },
      });
      await h.publish(TOPICS.applicationDecisions, '17', value);
      const [outcome] = await h.outcomesOf(id);
      expect(outcome).toMatchObject({
        command_id: id,
        target_id: '17',
        status: 'rejected',
        attempts: 0,
        error: { code: 'invalid_message' },
      });
      expect(outcome!.error!.message).toContain('rentbridge.command.application-decision.v2');
      const [letter] = await h.deadLettersOf(id);
      expect(headersOf(letter!.message.headers)['dlq-reason']).toBe('invalid_message');
      expect(await h.writesTo(APPROVE(17))).toHaveLength(0);
    });
  });

  describe('when a finished command is delivered again', () => {
    it('publishes its outcome again and writes nothing', async () => {
      const app = await newApplication();
      const command = { decision_id: uid('dup'), application_id: app, decision: 'decline' };
      const id = await h.decision(command);
      await h.outcomesOf(id);
      await h.decision(command);
      const outcomes = await h.outcomesOf(id, 2);
      expect(outcomes.map((o) => o.status)).toEqual(['applied', 'applied']);
      expect(await h.writesTo(`/partner/v1/applications/${app}/decline`)).toHaveLength(1);
    });
  });

  describe('when a rejected command is redriven from its dead letter', () => {
    it('publishes its outcome again, writes nothing and is not dead-lettered again', async () => {
      const app = await newApplication('declined');
      const command = { decision_id: uid('redrive'), application_id: app, decision: 'approve' };
      const id = await h.decision(command);
      await h.deadLettersOf(id);
      await h.decision(command, { 'redrive-dead-letter-id': '1' });
      const outcomes = await h.outcomesOf(id, 2);
      expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'rejected']);
      expect(await h.writesTo(APPROVE(app))).toHaveLength(1);
      const later = await newApplication();
      const marker = await h.decision({
        decision_id: uid('marker'),
        application_id: later,
        decision: 'approve',
      });
      await h.outcomesOf(marker);
      expect(
        h.received.all.filter((r) => headersOf(r.message.headers)['dlq-command-id'] === id),
      ).toHaveLength(1);
    });
  });
});
