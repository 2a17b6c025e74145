import { describe, expect, it } from 'vitest';
import { judgeCustomer, judgeCustomerEnrollment } from '../../src/reconcile/onboarding-evidence.js';
import { ceSourceOf } from '../../src/reconcile/reconcile-settle.js';
import type { ReconcileCommand } from '../../src/reconcile/reconcile-types.js';

/**
 * Issue 45, the onboarding commands: a registration judged by the customer holding its e-mail, an
 * enrollment by its customer's newest enrollment, a parked one by where that record lies against
 * the snapshot's marker (decision 018), as the guard's read-back judges them.
 */
const NOW = Date.parse('2026-11-27T12:00:00Z');
const clock = { now: NOW, maxProcessingMs: 30_000 };
const EMAIL = 'ada@example.com';
const DETAILS = { first_name: 'Ada', last_name: 'Lovelace', phone: '5551234567' };
const MARKER_AT = '2026-11-27T10:00:00.000Z';

let seq = 0;
function registration(overrides: Partial<ReconcileCommand> = {}): ReconcileCommand {
  seq += 1;
  return {
    source: 'acme',
    commandType: 'customer_registration',
    commandId: `reg-${seq}`,
    targetId: EMAIL,
    state: 'applied',
    payload: { registration_id: `reg-${seq}`, email: EMAIL, ...DETAILS },
    snapshot: {
      found: false,
      marker: { id: '40', created_at: MARKER_AT, tied_ids: ['40'], tied_complete: true },
    },
    finishedAt: new Date(NOW - 3_600_000),
    updatedAt: new Date(NOW - 3_600_000),
    inScope: true,
    ...overrides,
  };
}

function enrollmentCommand(overrides: Partial<ReconcileCommand> = {}): ReconcileCommand {
  return registration({
    commandType: 'enrollment',
    targetId: '41',
    payload: { enrollment_request_id: `enr-${seq}`, customer_id: '41' },
    snapshot: { found: false, marker: { id: '900', created_at: MARKER_AT } },
    ...overrides,
  });
}

const customer = (fields: Record<string, unknown> = {}) => ({
  id: 41,
  email: 'Ada@Example.com',
  created_at: '2026-11-27T10:05:00.000Z',
  ...DETAILS,
  ...fields,
});
const seen = (record: Record<string, unknown> | null, unkeyed = 0) => ({ record, unkeyed });
const verdicts = (items: Array<{ verdict: string }>) => items.map((i) => i.verdict);

describe('registration verdicts', () => {
  it('confirms an applied registration whose customer holds the e-mail with its details', () => {
    expect(verdicts(judgeCustomer(EMAIL, seen(customer()), [registration()], clock))).toEqual(['confirmed']);
  });

  it('reports an applied registration missing when no customer holds the e-mail', () => {
    expect(verdicts(judgeCustomer(EMAIL, seen(null), [registration()], clock))).toEqual(['missing']);
  });

  it('answers unknown, not missing, when records read show no e-mail', () => {
    expect(verdicts(judgeCustomer(EMAIL, seen(null, 2), [registration()], clock))).toEqual(['unknown']);
  });

  it('calls it ambiguous when the customer shows other details', () => {
    const items = judgeCustomer(EMAIL, seen(customer({ phone: '5550000000' })), [registration()], clock);
    expect(items[0]).toMatchObject({ verdict: 'ambiguous', reason: expect.stringContaining('phone') });
  });

  it('settles a parked registration applied when its customer was created since the snapshot', () => {
    const parked = registration({ state: 'unverified' });
    expect(verdicts(judgeCustomer(EMAIL, seen(customer()), [parked], clock))).toEqual(['settled_applied']);
  });

  it('settles a parked registration absent when the customer holding the e-mail predates the snapshot', () => {
    const parked = registration({ state: 'unverified' });
    const older = customer({ created_at: '2026-11-20T00:00:00.000Z' });
    expect(verdicts(judgeCustomer(EMAIL, seen(older), [parked], clock))).toEqual(['settled_absent']);
  });

  it('takes a customer the snapshot page held (tied with the marker) for someone else’s', () => {
    const parked = registration({ state: 'unverified' });
    const tied = customer({ id: 40, created_at: MARKER_AT });
    expect(verdicts(judgeCustomer(EMAIL, seen(tied), [parked], clock))).toEqual(['settled_absent']);
  });

  it('answers unknown for a tie the snapshot page did not hold all of', () => {
    const marker = { id: '40', created_at: MARKER_AT, tied_ids: ['40'], tied_complete: false };
    const parked = registration({ state: 'unverified', snapshot: { marker } });
    const tied = customer({ id: 39, created_at: MARKER_AT });
    expect(verdicts(judgeCustomer(EMAIL, seen(tied), [parked], clock))).toEqual(['unknown']);
  });

  it('settles absent only once the processing bound has passed', () => {
    const recent = new Date(NOW - 1000);
    const parked = registration({ state: 'unverified', finishedAt: recent, updatedAt: recent });
    expect(verdicts(judgeCustomer(EMAIL, seen(null), [parked], clock))).toEqual(['unknown']);
  });

  it('answers unknown for a parked registration without a snapshot to place the customer by', () => {
    const parked = registration({ state: 'unverified', snapshot: null });
    expect(verdicts(judgeCustomer(EMAIL, seen(customer()), [parked], clock))).toEqual(['unknown']);
  });

  it('reports a customer created after a registration rentbridge gave up on as unexpected', () => {
    const gaveUp = registration({ state: 'exhausted' });
    const [item] = judgeCustomer(EMAIL, seen(customer()), [gaveUp], clock);
    expect(item).toMatchObject({ verdict: 'unexpected', commandId: null, targetId: EMAIL });
    expect(item!.reason).toContain(`acme/${gaveUp.commandId} (exhausted)`);
  });

  it('says nothing of a refused registration whose e-mail another customer held before', () => {
    const refused = registration({ state: 'rejected' });
    const older = customer({ created_at: '2026-11-20T00:00:00.000Z' });
    expect(judgeCustomer(EMAIL, seen(older), [refused], clock)).toEqual([]);
  });

  it('calls two registrations of one e-mail that both landed ambiguous', () => {
    const items = judgeCustomer(EMAIL, seen(customer()), [registration(), registration()], clock);
    expect(verdicts(items)).toEqual(['ambiguous', 'ambiguous']);
  });
});

describe('enrollment verdicts', () => {
  const enrollment = (fields: Record<string, unknown> = {}) => ({
    id: 950,
    customer_id: 41,
    status: 'active',
    ...fields,
  });

  it('confirms an applied enrollment whose customer’s newest enrollment is active', () => {
    expect(verdicts(judgeCustomerEnrollment('41', seen(enrollment()), [enrollmentCommand()], clock))).toEqual(
      ['confirmed'],
    );
  });

  it('reports it missing when the customer has no enrollment, or none active', () => {
    const ended = judgeCustomerEnrollment(
      '41',
      seen(enrollment({ status: 'cancelled' })),
      [enrollmentCommand()],
      clock,
    );
    expect(ended[0]).toMatchObject({ verdict: 'missing', reason: expect.stringContaining('cancelled') });
    expect(verdicts(judgeCustomerEnrollment('41', seen(null), [enrollmentCommand()], clock))).toEqual([
      'missing',
    ]);
  });

  it('settles a parked enrollment applied when the enrollment is newer than the snapshot’s marker', () => {
    const parked = enrollmentCommand({ state: 'unverified' });
    expect(verdicts(judgeCustomerEnrollment('41', seen(enrollment()), [parked], clock))).toEqual([
      'settled_applied',
    ]);
  });

  it('settles it absent when the customer’s enrollment predates the snapshot, or there is none', () => {
    const parked = enrollmentCommand({ state: 'unverified' });
    expect(verdicts(judgeCustomerEnrollment('41', seen(enrollment({ id: 850 })), [parked], clock))).toEqual([
      'settled_absent',
    ]);
    expect(verdicts(judgeCustomerEnrollment('41', seen(null), [parked], clock))).toEqual(['settled_absent']);
    expect(verdicts(judgeCustomerEnrollment('41', seen(null, 1), [parked], clock))).toEqual(['unknown']);
  });

  it('reports an enrollment created after one rentbridge gave up on as unexpected, unless a write is under way', () => {
    const gaveUp = enrollmentCommand({ state: 'exhausted' });
    expect(verdicts(judgeCustomerEnrollment('41', seen(enrollment()), [gaveUp], clock))).toEqual([
      'unexpected',
    ]);
    const open = enrollmentCommand({ state: 'in_flight', inScope: false });
    const items = judgeCustomerEnrollment('41', seen(enrollment()), [gaveUp, open], clock);
    expect(items).toMatchObject([{ verdict: 'unknown', commandId: open.commandId }]);
  });
});

describe('the CloudEvent source a settled command’s follow-up goes out under', () => {
  it('is the receiver’s for a PMS source, and the source itself otherwise', () => {
    expect(ceSourceOf('acme')).toBe('/webhooks/pms/acme');
    expect(ceSourceOf('/test')).toBe('/test');
  });
});
