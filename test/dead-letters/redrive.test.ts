import type { Producer } from 'kafkajs';
import { beforeAll, describe, expect, it } from 'vitest';
import { listAudit } from '../../src/dead-letters/audit-repository.js';
import { REDRIVE_HEADER } from '../../src/dead-letters/dead-letter-headers.js';
import { getDeadLetter } from '../../src/dead-letters/dead-letter-repository.js';
import { discardDeadLetter, redriveDeadLetter, type RedriveDeps } from '../../src/dead-letters/redrive.js';
import { TOPICS } from '../../src/kafka/topics.js';
import { createLogger } from '../../src/logger.js';
import { useApp } from '../support/app.js';
import type { TestDatabase } from '../support/db.js';
import type { TestKafka } from '../support/kafka.js';
import { buildDecisionLetter, seedGuardRow, seedLetter } from './build-dead-letter.js';

describe('redrive', () => {
  const app = useApp({ topics: [TOPICS.applicationDecisions, TOPICS.rentalPayments], producer: true });
  let database: TestDatabase;
  let kafka: TestKafka;
  let producer: Producer;
  let deps: RedriveDeps;

  beforeAll(() => {
    ({ database, kafka, producer } = app);
    deps = {
      db: database.db,
      producer,
      topicPrefix: kafka.prefix,
      logger: createLogger({ level: 'silent' }),
    };
  });

  /** Every message on the original topic (a fresh consumer reads from the start). */
  async function sentMessages(expected: number, timeoutMs = 20_000) {
    return kafka.readMessages(TOPICS.applicationDecisions, expected, timeoutMs);
  }

  describe('when the guard says the command was not applied (unverified)', () => {
    it('resets the guard row, republishes once with redrive headers and audits it', async () => {
      const letter = buildDecisionLetter(kafka.prefix);
      const id = await seedLetter(database.db, kafka.prefix, letter);
      await seedGuardRow(database.db, letter.decisionId, 'unverified', letter.applicationId);

      const outcome = await redriveDeadLetter(deps, id, { actor: 'alice', reason: 'partner fixed' });
      expect(outcome).toMatchObject({ action: 'send', guardState: 'unverified', guardReset: true });

      const messages = await sentMessages(1);
      expect(messages).toHaveLength(1);
      const [message] = messages;
      expect(message!.value!.toString()).toBe(letter.value);
      expect(message!.key!.toString()).toBe(letter.applicationId);
      expect(message!.headers![REDRIVE_HEADER.redrivenFrom]!.toString()).toBe(String(id));
      expect(message!.headers![REDRIVE_HEADER.redrivenBy]!.toString()).toBe('alice');
      expect(Date.parse(message!.headers![REDRIVE_HEADER.redrivenAt]!.toString())).not.toBeNaN();
      expect(message!.headers!['content-type']!.toString()).toContain('cloudevents');
      expect(Object.keys(message!.headers!).some((h) => h.startsWith('dlq-'))).toBe(false);

      // unverified → in_flight: the guard reads back before any write; the history stays.
      const row = await database.db.command.findFirst({
        where: { commandId: letter.decisionId },
        include: { attemptLog: true },
      });
      expect(row).toMatchObject({ state: 'in_flight', finishedAt: null, attempts: 2 });
      expect(row?.attemptLog).toHaveLength(2);
      expect((await getDeadLetter(database.db, id))?.state).toBe('redriven');

      const [audit] = await listAudit(database.db, { target: `dead_letter:${id}` });
      expect(audit).toMatchObject({ actor: 'alice', action: 'redrive', reason: 'partner fixed' });
      const reset = audit!.details.guardRowReset as { state: string; resetTo: string; history: unknown[] };
      expect(reset).toMatchObject({ state: 'unverified', resetTo: 'in_flight' });
      expect(reset.history).toHaveLength(2);

      // A redriven letter is not redriven again: nothing more is sent.
      expect((await redriveDeadLetter(deps, id, { actor: 'alice' })).action).toBe('skip');
      const mine = (await sentMessages(100, 4_000)).filter((m) => m.key?.toString() === letter.applicationId);
      expect(mine).toHaveLength(1);
    });
  });

  describe('when the guard rejected the command', () => {
    it('puts the guard row back to pending so the consumer writes again', async () => {
      const letter = buildDecisionLetter(kafka.prefix, { reason: 'rejected' });
      const id = await seedLetter(database.db, kafka.prefix, letter);
      await seedGuardRow(database.db, letter.decisionId, 'rejected');
      const outcome = await redriveDeadLetter(deps, id, { actor: 'alice', dryRun: true });
      expect(outcome).toMatchObject({ action: 'send', guardReset: true, dryRun: true });
      expect(outcome.message).toContain('rejected → pending');
      expect((await database.db.command.findFirst({ where: { commandId: letter.decisionId } }))?.state).toBe(
        'rejected',
      );

      await redriveDeadLetter(deps, id, { actor: 'alice' });
      expect((await database.db.command.findFirst({ where: { commandId: letter.decisionId } }))?.state).toBe(
        'pending',
      );
    });
  });

  describe('when the message cannot be sent', () => {
    it('reopens the letter, audits the failure and throws', async () => {
      const letter = buildDecisionLetter(kafka.prefix);
      const id = await seedLetter(database.db, kafka.prefix, letter);
      const disconnected = kafka.kafka.producer();
      await expect(
        redriveDeadLetter({ ...deps, producer: disconnected }, id, { actor: 'gina' }),
      ).rejects.toThrow(/disconnected/i);
      expect(await getDeadLetter(database.db, id)).toMatchObject({ state: 'open', resolvedAt: null });
      const actions = (await listAudit(database.db, { target: `dead_letter:${id}` })).map((a) => a.action);
      expect(actions).toEqual(['redrive_failed', 'redrive']);
    });
  });

  describe('when the guard says the command is already applied', () => {
    it('sends nothing and closes the letter as closed_applied', async () => {
      const letter = buildDecisionLetter(kafka.prefix);
      const id = await seedLetter(database.db, kafka.prefix, letter);
      await seedGuardRow(database.db, letter.decisionId, 'applied');

      const dry = await redriveDeadLetter(deps, id, { actor: 'bob', dryRun: true });
      expect(dry).toMatchObject({ action: 'close_applied', dryRun: true });
      expect((await getDeadLetter(database.db, id))?.state).toBe('open');

      const outcome = await redriveDeadLetter(deps, id, { actor: 'bob' });
      expect(outcome.action).toBe('close_applied');
      expect((await getDeadLetter(database.db, id))?.state).toBe('closed_applied');
      expect(await database.db.command.findFirst({ where: { commandId: letter.decisionId } })).not.toBeNull();
      const sent = (await sentMessages(100, 4_000)).filter((m) => m.key?.toString() === letter.applicationId);
      expect(sent).toEqual([]);
      const [audit] = await listAudit(database.db, { target: `dead_letter:${id}` });
      expect(audit).toMatchObject({ actor: 'bob', action: 'close_applied' });
    });
  });

  describe('when a correction is given', () => {
    it('rejects an invalid command with a clear message and sends nothing', async () => {
      const letter = buildDecisionLetter(kafka.prefix);
      const id = await seedLetter(database.db, kafka.prefix, letter);
      const outcome = await redriveDeadLetter(deps, id, {
        actor: 'carol',
        correction: {
          decision_id: letter.decisionId,
          application_id: letter.applicationId,
          decision: 'maybe',
        },
      });
      expect(outcome.action).toBe('invalid');
      expect(outcome.message).toMatch(/decision/);
      const changedId = await redriveDeadLetter(deps, id, {
        actor: 'carol',
        correction: { decision_id: 'another-id', application_id: letter.applicationId, decision: 'decline' },
      });
      expect(changedId).toMatchObject({ action: 'invalid' });
      expect(changedId.message).toMatch(/keep decision_id/);
      const row = await getDeadLetter(database.db, id);
      expect(row).toMatchObject({ state: 'open', correctedValue: null });
      expect(await listAudit(database.db, { target: `dead_letter:${id}` })).toEqual([]);
    });

    it('sends the corrected value, keeps it beside the original and audits the correction', async () => {
      const letter = buildDecisionLetter(kafka.prefix, {
        data: { decision_id: 'dec-fixme', application_id: 'app-fixme', decision: 'approve', extra: 1 },
        decisionId: 'dec-fixme',
        applicationId: 'app-fixme',
        reason: 'invalid_message',
      });
      const id = await seedLetter(database.db, kafka.prefix, letter);
      const corrected = {
        decision_id: 'dec-fixme',
        application_id: 'app-fixme',
        decision: 'decline',
        reason: 'dup',
      };
      const outcome = await redriveDeadLetter(deps, id, { actor: 'carol', correction: corrected });
      expect(outcome.action).toBe('send');

      const row = await getDeadLetter(database.db, id);
      expect(row?.value).toBe(letter.value);
      expect(JSON.parse(row!.correctedValue!).data).toEqual(corrected);
      const sent = (await sentMessages(10, 5_000)).filter((m) => m.key?.toString() === 'app-fixme');
      expect(sent).toHaveLength(1);
      expect(sent[0]!.value!.toString()).toBe(row!.correctedValue);
      const actions = (await listAudit(database.db, { target: `dead_letter:${id}` })).map((a) => a.action);
      expect(actions.sort()).toEqual(['correct', 'redrive']);
    });
  });

  describe('when discarding', () => {
    it('requires a reason, closes the letter and audits who and why', async () => {
      const id = await seedLetter(database.db, kafka.prefix, buildDecisionLetter(kafka.prefix));
      await expect(discardDeadLetter(deps, id, { actor: 'dan', reason: '  ' })).rejects.toThrow(
        /reason is required/,
      );
      expect((await getDeadLetter(database.db, id))?.state).toBe('open');

      expect(await discardDeadLetter(deps, id, { actor: 'dan', reason: 'test data' })).toMatchObject({
        action: 'discarded',
      });
      const row = await getDeadLetter(database.db, id);
      expect(row).toMatchObject({ state: 'discarded', resolvedBy: 'dan', resolution: 'test data' });
      const [audit] = await listAudit(database.db, { target: `dead_letter:${id}` });
      expect(audit).toMatchObject({ actor: 'dan', action: 'discard', reason: 'test data' });
      expect((await redriveDeadLetter(deps, id, { actor: 'dan' })).action).toBe('skip');
    });
  });
});
