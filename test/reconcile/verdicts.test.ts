import { describe, expect, it } from 'vitest';
import { parseReconcileOptions } from '../../src/cli/commands/reconcile.js';
import { UsageError } from '../../src/errors.js';
import { judgeApplication } from '../../src/reconcile/decision-evidence.js';
import { judgeEnrollment } from '../../src/reconcile/payment-evidence.js';
import type { ReconcileCommand } from '../../src/reconcile/reconcile-types.js';

const NOW = Date.parse('2026-11-27T12:00:00Z');
const clock = { now: NOW, maxProcessingMs: 30_000 };
const PAID = { amount_cents: 125_000, paid_on: '2026-11-01', period: '2026-11' };

let seq = 0;
function buildCommand(overrides: Partial<ReconcileCommand> = {}): ReconcileCommand {
  seq += 1;
  return {
    source: 'acme',
    commandType: 'rental_payment',
    commandId: `pay-${seq}`,
    targetId: '7',
    state: 'applied',
    payload: { payment_id: `pay-${seq}`, enrollment_id: 7, ...PAID },
    snapshot: {
      found: true,
      updated_at: '2026-11-01T00:00:00Z',
      matching_payments: 0,
      payments_visible: true,
    },
    finishedAt: new Date(NOW - 3_600_000),
    updatedAt: new Date(NOW - 3_600_000),
    inScope: true,
    ...overrides,
  };
}

const enrollment = (payments: unknown[] | undefined, updated_at = '2026-11-01T00:00:00Z') => ({
  id: 7,
  updated_at,
  ...(payments && { rental_payments: payments }),
});

const verdicts = (items: Array<{ verdict: string }>) => items.map((i) => i.verdict).sort();

describe('payment verdicts', () => {
  describe('when an applied command’s payment is on its enrollment once', () => {
    it('confirms it', () => {
      expect(verdicts(judgeEnrollment('7', enrollment([PAID]), [buildCommand()], clock))).toEqual([
        'confirmed',
      ]);
    });
  });

  describe('when the payment is gone', () => {
    it('reports the command missing', () => {
      expect(verdicts(judgeEnrollment('7', enrollment([]), [buildCommand()], clock))).toEqual(['missing']);
    });
  });

  describe('when two identical payments are on the enrollment', () => {
    it('calls the command ambiguous and reports no separate unexpected payment', () => {
      expect(verdicts(judgeEnrollment('7', enrollment([PAID, PAID]), [buildCommand()], clock))).toEqual([
        'ambiguous',
      ]);
    });
  });

  describe('when a payment no command explains is on the enrollment', () => {
    it('reports it unexpected from the first payment rentbridge reported on, not before', () => {
      const older = { ...PAID, amount_cents: 1, paid_on: '2026-10-01' };
      const newer = { ...PAID, amount_cents: 2, paid_on: '2026-11-15' };
      const items = judgeEnrollment('7', enrollment([older, PAID, newer]), [buildCommand()], clock);
      expect(verdicts(items)).toEqual(['confirmed', 'unexpected']);
      expect(items.find((i) => i.verdict === 'unexpected')!.evidence.payment).toEqual(newer);
    });

    it('names a command rentbridge believed not applied that has the same facts', () => {
      const rejected = buildCommand({ state: 'rejected' });
      const [item] = judgeEnrollment('7', enrollment([PAID]), [rejected], clock);
      expect(item).toMatchObject({ verdict: 'unexpected', commandId: null });
      expect(item!.reason).toContain(`${rejected.commandId} (rejected)`);
    });
  });

  describe('when a payment’s command is still pending or in flight', () => {
    it.each(['pending', 'in_flight'])('calls it unknown (%s), not unexpected', (state) => {
      const open = buildCommand({ state, inScope: false });
      const [item] = judgeEnrollment('7', enrollment([PAID]), [open], clock);
      expect(item).toMatchObject({ verdict: 'unknown', commandId: open.commandId });
      expect(item!.reason).toContain('still under way');
    });
  });

  describe('when a parked command’s payment is there', () => {
    it('settles it applied when the baseline held none', () => {
      const parked = buildCommand({ state: 'unverified' });
      expect(verdicts(judgeEnrollment('7', enrollment([PAID]), [parked], clock))).toEqual([
        'settled_applied',
      ]);
    });

    it('calls it ambiguous when the baseline already held one', () => {
      const parked = buildCommand({
        state: 'unverified',
        snapshot: { found: true, updated_at: null, matching_payments: 1, payments_visible: true },
      });
      expect(verdicts(judgeEnrollment('7', enrollment([PAID]), [parked], clock))).toEqual(['ambiguous']);
    });
  });

  describe('when a parked command’s payment is absent', () => {
    it('says unknown within the processing bound and settled_absent after it', () => {
      const recent = buildCommand({ state: 'unverified', finishedAt: new Date(NOW - 10_000) });
      expect(verdicts(judgeEnrollment('7', enrollment([]), [recent], clock))).toEqual(['unknown']);
      const old = buildCommand({ state: 'unverified' });
      expect(verdicts(judgeEnrollment('7', enrollment([]), [old], clock))).toEqual(['settled_absent']);
    });
  });

  describe('when the evidence is missing', () => {
    it('answers unknown for a record without the payments list, and for a record not listed', () => {
      const applied = buildCommand();
      expect(verdicts(judgeEnrollment('7', enrollment(undefined), [applied], clock))).toEqual(['unknown']);
      const parked = buildCommand({ state: 'unverified' });
      expect(verdicts(judgeEnrollment('7', null, [applied, parked], clock))).toEqual(['missing', 'unknown']);
    });
  });

  describe('when a command outside the window explains a payment', () => {
    it('neither reports it nor calls its payment unexpected', () => {
      const older = buildCommand({ inScope: false, payload: { ...PAID, amount_cents: 9 } });
      const items = judgeEnrollment(
        '7',
        enrollment([PAID, { ...PAID, amount_cents: 9 }]),
        [older, buildCommand()],
        clock,
      );
      expect(verdicts(items)).toEqual(['confirmed']);
    });
  });
});

describe('decision verdicts', () => {
  const decision = (overrides: Partial<ReconcileCommand> = {}) =>
    buildCommand({
      commandType: 'application_decision',
      payload: { decision_id: 'd', application_id: 7, decision: 'approve' },
      snapshot: { found: true, status: 'submitted', updated_at: '2026-11-01T00:00:00Z' },
      ...overrides,
    });
  const application = (status: string, updated_at = '2026-11-01T00:00:00Z') => ({
    id: 7,
    status,
    updated_at,
  });

  it('confirms an applied decision the application holds, and reports one it does not hold missing', () => {
    expect(verdicts(judgeApplication(application('approved'), [decision()], clock))).toEqual(['confirmed']);
    expect(verdicts(judgeApplication(application('submitted'), [decision()], clock))).toEqual(['missing']);
  });

  it('settles a parked decision applied when the application holds its status', () => {
    const parked = decision({ state: 'unverified' });
    expect(verdicts(judgeApplication(application('approved'), [parked], clock))).toEqual(['settled_applied']);
  });

  it('settles a parked decision absent only when the application is unchanged since the snapshot', () => {
    const parked = decision({ state: 'unverified' });
    expect(verdicts(judgeApplication(application('submitted'), [parked], clock))).toEqual(['settled_absent']);
    expect(
      verdicts(judgeApplication(application('submitted', '2026-11-20T00:00:00Z'), [parked], clock)),
    ).toEqual(['unknown']);
  });

  it('calls decisions of both kinds on one application ambiguous where the record disagrees', () => {
    const approve = decision();
    const decline = decision({ payload: { decision_id: 'e', application_id: 7, decision: 'decline' } });
    expect(verdicts(judgeApplication(application('declined'), [approve, decline], clock))).toEqual([
      'ambiguous',
      'confirmed',
    ]);
  });
});

describe('rentbridge reconcile options', () => {
  const now = new Date('2026-11-27T12:00:00Z');

  it('defaults to the 24 hours before now, as a table', () => {
    expect(parseReconcileOptions({}, now)).toEqual({
      scope: {
        since: new Date('2026-11-26T12:00:00Z'),
        until: now,
        source: undefined,
        commandType: undefined,
      },
      format: 'table',
    });
  });

  it('reads a date as midnight UTC', () => {
    const { scope } = parseReconcileOptions({ since: '2026-11-01', until: '2026-11-02' }, now);
    expect(scope.since.toISOString()).toBe('2026-11-01T00:00:00.000Z');
  });

  it.each([
    [{ format: 'xml' }, /--format must be one of table, json, csv/],
    [
      { type: 'lease' },
      /--type must be one of rental_payment, application_decision, customer_registration, enrollment/,
    ],
    [{ since: 'yesterday' }, /--since "yesterday" is not a date/],
    [{ since: '2026-11-02', until: '2026-11-01' }, /--since must be before --until/],
  ])('refuses %o as bad usage', (opts, message) => {
    expect(() => parseReconcileOptions(opts, now)).toThrow(UsageError);
    expect(() => parseReconcileOptions(opts, now)).toThrow(message);
  });
});
