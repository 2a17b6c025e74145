import { describe, expect, it } from 'vitest';
import { applicationDecisions } from '../../src/command-types/application-decisions/application-decisions.js';
import { TOPICS } from '../../src/kafka/topics.js';
import type { FaultInput } from '../../src/dev/sandbox/faults.js';
import { headersOf, uid } from './support/harness.js';
import { useHarness } from '../support/app.js';

const APPROVE = (id: number) => `/partner/v1/applications/${id}/approve`;

describe('application-decisions consumer', () => {
  const h = useHarness([applicationDecisions]);

  async function newApplication(status = 'submitted'): Promise<number> {
    const [record] = await h.control.addRecords('applications', [{ status }]);
    return Number(record!.id);
  }

  async function applied(path: string): Promise<number> {
    return (await h.writesTo(path)).filter((w) => w.applied).length;
  }

  /**
   * The design's fault table (DESIGN.md, "The guarded write"): one row per answer of the Partner
   * API to the approval, and what the consumer must end with — the outcome, how many attempts,
   * the writes the sandbox's ledger saw (applied or not, with their status), the application's
   * final state and, when the command does not succeed, its dead letter.
   */
  interface FaultRow {
    name: string;
    /** The application's status before the command. */
    initial?: string;
    faults: Array<Omit<FaultInput, 'method' | 'path'>>;
    outcome: { status: string; attempts: number; error?: Record<string, unknown> };
    /** The suffixes of the request ids the outcome lists (`<command id>.aN`). */
    requestIds?: string[];
    /** Ledger writes to the approve path, in order: [applied, HTTP status]. */
    ledger: Array<[boolean, number | null]>;
    finalStatus: string;
    deadLetter?: Record<string, string>;
    /** The second write started at least this long after the first (a wait the design asks for). */
    secondWriteAfterMs?: number;
  }
  const FAULT_TABLE: FaultRow[] = [
    {
      name: '2xx: applied',
      faults: [],
      outcome: { status: 'applied', attempts: 1 },
      requestIds: ['a1'],
      ledger: [[true, 200]],
      finalStatus: 'approved',
    },
    {
      name: '429: not applied; waits Retry-After and writes again',
      faults: [{ kind: 'error', status: 429, code: 'rate_limited' }],
      outcome: { status: 'applied', attempts: 2 },
      // The sandbox answers `Retry-After: 1`.
      secondWriteAfterMs: 1000,
      ledger: [
        [false, 429],
        [true, 200],
      ],
      finalStatus: 'approved',
    },
    {
      name: '401: renews the token once and repeats the write',
      faults: [{ kind: 'error', status: 401, code: 'unauthenticated' }],
      outcome: { status: 'applied', attempts: 1 },
      ledger: [
        [false, 401],
        [true, 200],
      ],
      finalStatus: 'approved',
    },
    {
      name: '409 invalid_state_transition, already in the target state: already_applied',
      initial: 'approved',
      faults: [],
      outcome: { status: 'already_applied', attempts: 1 },
      ledger: [[false, 409]],
      finalStatus: 'approved',
    },
    {
      name: '409 invalid_state_transition, in another state: rejected',
      initial: 'declined',
      faults: [],
      outcome: { status: 'rejected', attempts: 1, error: { code: 'invalid_state_transition', status: 409 } },
      ledger: [[false, 409]],
      finalStatus: 'declined',
      deadLetter: { 'dlq-reason': 'rejected', 'dlq-attempts': '1' },
    },
    {
      name: '409 lock_failed: reads again and retries, bounded',
      faults: [{ kind: 'error', status: 409, code: 'lock_failed', times: 2 }],
      outcome: { status: 'applied', attempts: 3 },
      ledger: [
        [false, 409],
        [false, 409],
        [true, 200],
      ],
      finalStatus: 'approved',
    },
    {
      name: 'other 4xx (403 forbidden): rejected, no retry',
      faults: [{ kind: 'error', status: 403, code: 'forbidden' }],
      outcome: { status: 'rejected', attempts: 1, error: { code: 'forbidden', status: 403 } },
      ledger: [[false, 403]],
      finalStatus: 'submitted',
      deadLetter: { 'dlq-reason': 'rejected', 'dlq-attempts': '1', 'dlq-error-code': 'forbidden' },
    },
    {
      name: '5xx, applied: the read-back finds it applied and never writes again',
      faults: [{ kind: 'apply_then_error', status: 500 }],
      outcome: { status: 'applied', attempts: 1 },
      ledger: [[true, 500]],
      finalStatus: 'approved',
    },
    {
      name: 'time-out, applied: the read-back finds it applied and never writes again',
      faults: [{ kind: 'apply_then_timeout' }],
      outcome: { status: 'applied', attempts: 1 },
      ledger: [[true, null]],
      finalStatus: 'approved',
    },
    {
      name: '503, not applied: the read-back proves it not applied, retries and applies it once',
      faults: [{ kind: 'error', status: 503, code: 'request_timeout' }],
      outcome: { status: 'applied', attempts: 2 },
      requestIds: ['a1', 'a2'],
      ledger: [
        [false, 503],
        [true, 200],
      ],
      finalStatus: 'approved',
    },
    {
      name: '503 every time, never applied: exhausted after the bounded retries',
      faults: [{ kind: 'error', status: 503, code: 'request_timeout', times: 50 }],
      // Five retries after the first write, each after a read-back proved it not applied.
      outcome: { status: 'exhausted', attempts: 6, error: { status: 503 } },
      ledger: Array.from({ length: 6 }, () => [false, 503] as [boolean, number]),
      finalStatus: 'submitted',
      deadLetter: { 'dlq-reason': 'exhausted', 'dlq-attempts': '6' },
    },
  ];

  describe.each(FAULT_TABLE)('when the Partner API answers $name', (row) => {
    it('ends with the outcome, attempts, ledger writes and record the design gives', async () => {
      const app = await newApplication(row.initial);
      for (const fault of row.faults)
        await h.control.addFault({ method: 'POST', path: APPROVE(app), ...fault });
      try {
        const id = await h.decision({ decision_id: uid('row'), application_id: app, decision: 'approve' });
        const [outcome] = await h.outcomesOf(id);
        expect(outcome).toMatchObject({
          command_id: id,
          command_type: 'application_decision',
          target_id: String(app),
          ...row.outcome,
        });
        if (row.requestIds) {
          expect(outcome!.partner_request_ids).toEqual(row.requestIds.map((suffix) => `${id}.${suffix}`));
        }
        const writes = await h.writesTo(APPROVE(app));
        expect(writes.map((w) => [w.applied, w.status])).toEqual(row.ledger);
        expect(await applied(APPROVE(app))).toBe(row.ledger.filter(([ok]) => ok).length);
        if (row.requestIds) {
          expect(writes.map((w) => w.request_id)).toEqual(row.requestIds.map((suffix) => `${id}.${suffix}`));
        }
        const [record] = (await h.control.records('applications')).filter((r) => r.id === app);
        expect(record?.status).toBe(row.finalStatus);
        if (row.secondWriteAfterMs !== undefined) {
          const { rows } = await h.database.sql.query<{ started_at: Date }>(
            "SELECT started_at FROM command_attempts WHERE command_id = $1 AND kind = 'write' ORDER BY attempt",
            [id],
          );
          expect(rows).toHaveLength(2);
          expect(rows[1]!.started_at.getTime() - rows[0]!.started_at.getTime()).toBeGreaterThanOrEqual(
            row.secondWriteAfterMs,
          );
        }
        if (row.deadLetter) {
          const [letter] = await h.deadLettersOf(id);
          expect(headersOf(letter!.message.headers)).toMatchObject(row.deadLetter);
        }
      } finally {
        await h.control.clearFaults();
      }
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
      await expect
        .poll(async () => (await h.writesTo(APPROVE(app))).length, { timeout: 2000, interval: 20 })
        .toBeGreaterThan(0);
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
        data: { decision_id: id, application_id: '917017', decision: 'approve' },
      });
      await h.publish(TOPICS.applicationDecisions, '917017', value);
      const [outcome] = await h.outcomesOf(id);
      expect(outcome).toMatchObject({
        command_id: id,
        target_id: '917017',
        status: 'rejected',
        attempts: 0,
        error: { code: 'invalid_message' },
      });
      expect(outcome!.error!.message).toContain('rentbridge.command.application-decision.v2');
      const [letter] = await h.deadLettersOf(id);
      expect(headersOf(letter!.message.headers)['dlq-reason']).toBe('invalid_message');
      expect(await h.writesTo(APPROVE(917017))).toHaveLength(0);
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
