import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { customerRegistrations } from '../../src/commands/customer-registrations.js';
import {
  createDeadLetterIndexer,
  type DeadLetterIndexer,
} from '../../src/dead-letters/dead-letter-indexer.js';
import { getDeadLetter } from '../../src/dead-letters/dead-letter-repository.js';
import { redriveDeadLetter } from '../../src/dead-letters/redrive.js';
import { toCloudEvent } from '../../src/events/cloudevent.js';
import { COMMAND_TYPES } from '../../src/events/commands.js';
import { TOPICS } from '../../src/kafka/topics.js';
import {
  createHarness,
  headersOf,
  logger,
  outcomeOf,
  uid,
  type Harness,
} from '../consumers/support/harness.js';

const CREATE_CUSTOMER = '/v1/partners/customers';

/** A registration refused by the check, corrected by ops and redriven through the guard. */
describe('redrive through the customer-registrations consumer', () => {
  let h: Harness;
  let indexer: DeadLetterIndexer;

  beforeAll(async () => {
    h = await createHarness();
    await h.startConsumer(customerRegistrations);
    indexer = createDeadLetterIndexer({
      db: h.database.db,
      kafka: h.kafka.kafka,
      logger,
      topicPrefix: h.kafka.prefix,
    });
    await indexer.start();
  });
  afterAll(async () => {
    await indexer?.stop();
    await h?.close();
  });

  async function indexedLetterOf(commandId: string): Promise<number> {
    return vi.waitFor(
      async () => {
        const row = await h.database.db.deadLetter.findFirst({ where: { commandId } });
        if (!row) throw new Error(`dead letter of ${commandId} not indexed`);
        return Number(row.id);
      },
      { timeout: 30_000, interval: 200 },
    );
  }

  describe('when a registration refused by the check is corrected and redriven', () => {
    it('checks again, creates the customer once, and a second redrive closes it as applied', async () => {
      const id = uid('reg-redrive');
      const command = {
        registration_id: id,
        pms_reference: `t-${id}`,
        first_name: 'Ada',
        last_name: 'Lovelace',
        email: `${id}@example.com`,
        phone: '12',
        check: true,
      };
      await h.publish(
        TOPICS.customerRegistrations,
        command.email,
        JSON.stringify(
          toCloudEvent({ id, source: '/test', type: COMMAND_TYPES.customerRegistration, data: command }),
        ),
      );
      const [refused] = await h.outcomesOf(id);
      expect(refused).toMatchObject({
        status: 'rejected',
        check_details: { phone: 'must be 10 to 15 digits' },
      });
      const letterId = await indexedLetterOf(id);
      expect((await getDeadLetter(h.database.db, letterId))?.reason).toBe('rejected');

      const deps = { db: h.database.db, producer: h.producer, topicPrefix: h.kafka.prefix, logger };
      const outcome = await redriveDeadLetter(deps, letterId, {
        actor: 'ops-test',
        correction: { ...command, phone: '5551234567' },
      });
      expect(outcome).toMatchObject({ action: 'send', guardState: 'rejected', guardReset: true });

      const [applied] = await h.received.waitFor(
        (r) =>
          r.topic === TOPICS.customerRegistrationOutcomes &&
          headersOf(r.message.headers)['command-id'] === id &&
          outcomeOf(r).status === 'applied',
      );
      const customers = (await h.control.records('customers')).filter((c) => c.email === command.email);
      expect(customers).toHaveLength(1);
      expect(outcomeOf(applied!)).toMatchObject({ partner_customer_id: String(customers[0]!.id) });
      expect(outcomeOf(applied!).check_details).toBeUndefined();

      const again = await redriveDeadLetter(deps, letterId, { actor: 'ops-test', force: true });
      expect(again.action).toBe('close_applied');
      const writes = (await h.writesTo(CREATE_CUSTOMER)).filter(
        (w) => (w as { body?: { email?: string } }).body?.email === command.email,
      );
      expect(writes).toHaveLength(1);
    });
  });
});
