import { beforeAll, describe, expect, it } from 'vitest';
import { customerRegistrations } from '../../src/command-types/customer-registrations/customer-registrations.js';
import { getDeadLetter } from '../../src/dead-letters/dead-letter-repository.js';
import { redriveDeadLetter } from '../../src/dead-letters/redrive.js';
import { toCloudEvent } from '../../src/contracts/cloudevent.js';
import { COMMAND_TYPES } from '../../src/contracts/command-contracts.js';
import { TOPICS } from '../../src/kafka/topics.js';
import { headersOf, logger, outcomeOf, type Harness } from '../consumers/support/harness.js';
import { useRedriveHarness } from './redrive-harness.js';
import { buildRegistration } from '../receiver/webhooks.js';

const CREATE_CUSTOMER = '/v1/partners/customers';

/** A registration refused by the check, corrected by ops and redriven through the guard. */
describe('redrive through the customer-registrations consumer', () => {
  const r = useRedriveHarness(customerRegistrations);
  let h: Harness;
  const indexedLetterOf = (commandId: string) => r.indexedLetterOf(commandId);

  beforeAll(() => {
    h = r.h;
  });

  describe('when a registration refused by the check is corrected and redriven', () => {
    it('checks again, creates the customer once, and a second redrive closes it as applied', async () => {
      const command = buildRegistration({ phone: '12', check: true });
      const id = command.registration_id;
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
