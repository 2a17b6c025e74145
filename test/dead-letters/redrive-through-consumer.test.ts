import { beforeAll, describe, expect, it } from 'vitest';
import { applicationDecisions } from '../../src/command-types/application-decisions/application-decisions.js';
import { getDeadLetter } from '../../src/dead-letters/dead-letter-repository.js';
import { redriveDeadLetter } from '../../src/dead-letters/redrive.js';
import { headersOf, logger, outcomeOf, uid, type Harness } from '../consumers/support/harness.js';
import { useRedriveHarness } from './redrive-harness.js';

const APPROVE = (id: number) => `/partner/v1/applications/${id}/approve`;

/**
 * The whole loop with the real command consumer and the sandbox: a command fails for good, is
 * dead-lettered and indexed; ops redrive it; the consumer applies it once.
 */
describe('redrive through the application-decisions consumer', () => {
  const r = useRedriveHarness(applicationDecisions);
  let h: Harness;
  const indexedLetterOf = (commandId: string) => r.indexedLetterOf(commandId);

  beforeAll(() => {
    h = r.h;
  });

  describe('when an exhausted command is redriven after the cause is gone', () => {
    it('is applied exactly once, and a second redrive sends nothing', async () => {
      const [record] = await h.control.addRecords('applications', [{ status: 'submitted' }]);
      const app = Number(record!.id);
      await h.control.addFault({
        method: 'POST',
        path: APPROVE(app),
        kind: 'error',
        status: 409,
        code: 'lock_failed',
        times: 1000,
      });
      const id = await h.decision({ decision_id: uid('redrive'), application_id: app, decision: 'approve' });
      const [first] = await h.outcomesOf(id);
      expect(first?.status).toBe('exhausted');
      const letterId = await indexedLetterOf(id);
      expect((await getDeadLetter(h.database.db, letterId))?.reason).toBe('exhausted');

      await h.control.clearFaults();
      const deps = { db: h.database.db, producer: h.producer, topicPrefix: h.kafka.prefix, logger };
      const outcome = await redriveDeadLetter(deps, letterId, { actor: 'ops-test' });
      expect(outcome).toMatchObject({ action: 'send', guardState: 'exhausted', guardReset: true });

      // Outcomes are at least once: wait for the applied one, whatever came before it.
      const [applied] = await h.received.waitFor(
        (r) =>
          r.topic.startsWith('outcomes.') &&
          headersOf(r.message.headers)['command-id'] === id &&
          outcomeOf(r).status === 'applied',
      );
      expect(outcomeOf(applied!).partner_request_ids.at(-1)).toBe(`${id}.a7`);
      const writes = await h.writesTo(APPROVE(app));
      expect(writes.filter((w) => w.applied)).toHaveLength(1);

      // The letter is redriven; forcing it again finds the command applied and closes it.
      const again = await redriveDeadLetter(deps, letterId, { actor: 'ops-test', force: true });
      expect(again.action).toBe('close_applied');
      expect((await getDeadLetter(h.database.db, letterId))?.state).toBe('closed_applied');
      expect((await h.writesTo(APPROVE(app))).filter((w) => w.applied)).toHaveLength(1);
    });
  });
});
