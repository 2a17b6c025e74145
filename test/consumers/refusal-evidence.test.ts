import { beforeAll, describe, expect, it } from 'vitest';
import { customerRegistrations } from '../../src/command-types/customer-registrations/customer-registrations.js';
import { enrollments } from '../../src/command-types/enrollments/enrollments.js';
import { toCloudEvent } from '../../src/contracts/cloudevent.js';
import { COMMAND_TYPES } from '../../src/contracts/command-contracts.js';
import { TOPICS } from '../../src/kafka/topics.js';
import { FAST_GUARD, TEST_MAX_PROCESSING_MS, uid } from './support/harness.js';
import { useHarness } from '../support/app.js';
import { buildRegistration } from '../receiver/webhooks.js';

const CREATE_CUSTOMER = '/v1/partners/customers';
const CREATE_ENROLLMENT = '/partner/v1/enrollments';

/**
 * A refusal is evidence (issue 30): the list lags behind the platform (sandbox `list_lag_ms`), so
 * the read-back at the processing bound misses what the first, ambiguous write created, and the
 * retry is refused because of it (the e-mail taken, a second enrollment). The retry waits about
 * 2 s (back-off), by which time the list shows the record: the read after the refusal finds it.
 */
const LAG_MS = TEST_MAX_PROCESSING_MS + 800;
const SLOW_RETRY = { ...FAST_GUARD, backoffMs: 2000, maxBackoffMs: 2000 };

describe('when a retry after a write in doubt is refused because of that write', () => {
  const h = useHarness([customerRegistrations, enrollments], { guard: SLOW_RETRY });

  beforeAll(async () => {
    await h.control.setConfig({ list_lag_ms: LAG_MS });
  });

  const publish = async (topic: string, type: string, key: string, id: string, data: object) => {
    await h.publish(topic, key, JSON.stringify(toCloudEvent({ id, source: '/test', type, data })));
    return id;
  };

  it('ends a registration applied with the customer its first attempt created', async () => {
    await h.control.addFault({
      method: 'POST',
      path: CREATE_CUSTOMER,
      kind: 'apply_then_error',
      status: 503,
      times: 1,
    });
    const command = buildRegistration();
    const id = command.registration_id;
    await publish(
      TOPICS.customerRegistrations,
      COMMAND_TYPES.customerRegistration,
      command.email,
      id,
      command,
    );
    const [outcome] = await h.outcomesOf(id);
    const customers = (await h.control.records('customers')).filter((c) => c.email === command.email);
    expect(customers).toHaveLength(1);
    const creates = (await h.control.ledger()).writes.filter(
      (w) => w.path === CREATE_CUSTOMER && (w.body as { email?: string } | null)?.email === command.email,
    );
    // The retry was sent and refused: the read-back at the bound had missed the customer.
    expect(creates.map((w) => [w.applied, w.status])).toEqual([
      [true, 503],
      [false, 422],
    ]);
    expect(outcome).toMatchObject({
      status: 'applied',
      attempts: 2,
      partner_customer_id: String(customers[0]!.id),
    });
    expect(outcome!.existing_customer_id).toBeUndefined();
  });

  it('ends an enrollment applied with the enrollment its first attempt created', async () => {
    const [customer] = await h.control.addRecords('customers', [
      { first_name: 'A', last_name: 'B', email: `${uid('enr')}@example.com`, phone: '5550000003' },
    ]);
    await h.control.addFault({
      method: 'POST',
      path: CREATE_ENROLLMENT,
      kind: 'apply_then_error',
      status: 502,
      times: 1,
    });
    const id = uid('enr');
    await publish(TOPICS.enrollments, COMMAND_TYPES.enrollment, String(customer!.id), id, {
      enrollment_request_id: id,
      customer_id: String(customer!.id),
    });
    const [outcome] = await h.outcomesOf(id);
    const held = (await h.control.records('enrollments')).filter(
      (e) => String(e.customer_id) === String(customer!.id),
    );
    expect(held).toHaveLength(1);
    expect(outcome).toMatchObject({
      status: 'applied',
      attempts: 2,
      partner_enrollment_id: String(held[0]!.id),
    });
    expect(outcome!.existing_enrollment_id).toBeUndefined();
  });
});
