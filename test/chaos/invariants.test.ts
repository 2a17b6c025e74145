import { describe, expect, it } from 'vitest';
import type { LedgerEntry } from '../../src/dev/sandbox/control-client.js';
import { analyse, type Evidence } from './invariants.js';
import type { LoadState, SentCommand, SentWebhook } from './load-generator.js';
import type { ReadMessage } from './topic-reader.js';

/**
 * The chaos run's verdict is only worth something if each check can fail: these feed it
 * evidence of each broken promise, built by hand, and one clean run.
 */

function buildCommand(overrides: Partial<SentCommand> = {}): SentCommand {
  return {
    commandId: 'pay_1',
    source: 'acme',
    key: 'pay_1',
    kind: 'payment',
    targetId: '7',
    topic: 'commands.rental-payments',
    amountCents: 100_001,
    webhookIds: ['msg_1'],
    ...overrides,
  };
}

function buildHook(overrides: Partial<SentWebhook> = {}): SentWebhook {
  return {
    webhookId: 'msg_1',
    source: 'acme',
    kind: 'payment',
    type: 'rent_payment.received',
    commandId: 'pay_1',
    body: '{}',
    answers: [{ at: 1, status: 202 }],
    ackAt: 1,
    ...overrides,
  };
}

function message(
  topic: string,
  value: unknown,
  headers: Record<string, string> = {},
  offset = '0',
): ReadMessage {
  return { topic: `chaos.${topic}`, partition: 0, offset, key: '7', value: JSON.stringify(value), headers };
}

const commandEvent = (id = 'ev-1') =>
  message(
    'commands.rental-payments',
    { id, type: 'rentbridge.command.rental-payment', data: { payment_id: 'pay_1', amount_cents: 100_001 } },
    { 'webhook-id': 'msg_1' },
  );
const outcome = (status: string) =>
  message('outcomes.rental-payments', {
    id: 'out-1',
    type: 'rentbridge.outcome.rental-payment',
    data: { command_id: 'pay_1', status, target_id: '7' },
  });

function write(overrides: Partial<LedgerEntry> = {}): LedgerEntry {
  return {
    method: 'POST',
    path: '/partner/v1/enrollments/7/report_rental_payments',
    request_id: 'pay_1.a1',
    body: { rental_payments: [{ amount_cents: 100_001 }] },
    applied: true,
    status: 201,
    at: '2026-11-22T00:00:00.000Z',
    ...overrides,
  };
}

function buildEvidence(overrides: Partial<Evidence> = {}): Evidence {
  const load: LoadState = {
    webhooks: [buildHook()],
    commands: new Map([['pay_1', buildCommand()]]),
    recordChanges: [],
    controlErrors: 0,
  };
  return {
    load,
    topics: new Map([
      ['commands.rental-payments', [commandEvent()]],
      ['outcomes.rental-payments', [outcome('applied')]],
    ]),
    commandStates: new Map([['pay_1', 'applied']]),
    ledger: [write()],
    deliveries: [],
    ...overrides,
  };
}

const failed = (evidence: Evidence) =>
  analyse(evidence)
    .checks.filter((c) => !c.ok)
    .map((c) => c.name);

describe('chaos invariants', () => {
  describe('when every promise was kept', () => {
    it('passes every check', () => {
      expect(failed(buildEvidence())).toEqual([]);
    });
  });

  describe('when an acknowledged webhook never reached its topic', () => {
    it('fails "every acknowledged PMS webhook was published"', () => {
      const evidence = buildEvidence({
        topics: new Map([['outcomes.rental-payments', [outcome('applied')]]]),
      });
      expect(failed(evidence)).toContain('every acknowledged PMS webhook was published');
    });
  });

  describe('when the sandbox applied one command twice', () => {
    it('fails "each command applied at most once"', () => {
      const evidence = buildEvidence({ ledger: [write(), write({ request_id: 'pay_1.a2', status: null })] });
      expect(failed(evidence)).toContain('each command applied at most once (sandbox ledger)');
    });
  });

  describe('when a command was applied but the guard says it was not', () => {
    it('fails "the guard\'s verdict agrees with the ledger" and asks for a dead letter', () => {
      const evidence = buildEvidence({
        commandStates: new Map([['pay_1', 'exhausted']]),
        topics: new Map([
          ['commands.rental-payments', [commandEvent()]],
          ['outcomes.rental-payments', [outcome('exhausted')]],
        ]),
      });
      expect(failed(evidence)).toEqual([
        "the guard's verdict agrees with the ledger",
        'every command not applied is in dead letters with a reason',
      ]);
    });
  });

  describe('when a command is still in flight or its outcome disagrees', () => {
    it('fails "every command reached a final state"', () => {
      expect(failed(buildEvidence({ commandStates: new Map([['pay_1', 'in_flight']]) }))).toContain(
        'every command reached a final state, and its outcome says so',
      );
      const disagreeing = buildEvidence({
        topics: new Map([
          ['commands.rental-payments', [commandEvent()]],
          ['outcomes.rental-payments', [outcome('applied'), outcome('rejected')]],
        ]),
      });
      expect(failed(disagreeing)).toContain('every command reached a final state, and its outcome says so');
    });
  });

  describe('when one webhook became two events, or one id carries two events', () => {
    it('fails the CloudEvent id checks', () => {
      const twoEvents = buildEvidence({
        topics: new Map([
          ['commands.rental-payments', [commandEvent('ev-1'), commandEvent('ev-2')]],
          ['outcomes.rental-payments', [outcome('applied')]],
        ]),
      });
      expect(failed(twoEvents)).toContain(
        'one webhook became at most one event (distinct CloudEvent ids per webhook-id)',
      );
      const changed = message(
        'commands.rental-payments',
        {
          id: 'ev-1',
          type: 'rentbridge.command.rental-payment',
          data: { payment_id: 'pay_1', amount_cents: 5 },
        },
        { 'webhook-id': 'msg_1' },
        '1',
      );
      const sameIdDifferentData = buildEvidence({
        topics: new Map([
          ['commands.rental-payments', [commandEvent('ev-1'), changed]],
          ['outcomes.rental-payments', [outcome('applied')]],
        ]),
      });
      expect(failed(sameIdDifferentData)).toContain('a repeated CloudEvent id always carries the same event');
    });
  });

  describe('when two sources send commands with the same id (issue 35)', () => {
    /** beta's payment pay_1: another enrollment (8), another amount, its own outcome and write. */
    function withCollision(betaOutcomeTarget: string, betaWrites: LedgerEntry[]): Evidence {
      const evidence = buildEvidence();
      evidence.load.commands.set(
        'beta/pay_1',
        buildCommand({
          source: 'beta',
          key: 'beta/pay_1',
          collidesWith: 'pay_1',
          targetId: '8',
          amountCents: 100_002,
          webhookIds: ['msg_2'],
        }),
      );
      evidence.load.webhooks.push(
        buildHook({
          webhookId: 'msg_2',
          kind: 'colliding_payment',
          source: 'beta',
          commandKey: 'beta/pay_1',
        }),
      );
      evidence.topics.get('commands.rental-payments')!.push(
        message(
          'commands.rental-payments',
          {
            id: 'ev-2',
            type: 'rentbridge.command.rental-payment',
            source: '/webhooks/pms/beta',
            data: { payment_id: 'pay_1', amount_cents: 100_002 },
          },
          { 'webhook-id': 'msg_2' },
          '1',
        ),
      );
      evidence.topics.get('outcomes.rental-payments')!.push(
        message('outcomes.rental-payments', {
          id: 'out-2',
          type: 'rentbridge.outcome.rental-payment',
          data: {
            command_id: 'pay_1',
            command_source: 'beta',
            status: 'applied',
            target_id: betaOutcomeTarget,
          },
        }),
      );
      evidence.commandStates.set('beta/pay_1', 'applied');
      evidence.ledger.push(...betaWrites);
      return evidence;
    }
    const betaWrite = write({
      path: '/partner/v1/enrollments/8/report_rental_payments',
      request_id: 'pay_1-0123456789abcdef.a1',
      body: { rental_payments: [{ amount_cents: 100_002 }] },
    });

    it('passes when each is applied once and its outcome names its own target', () => {
      expect(failed(withCollision('8', [betaWrite]))).toEqual([]);
    });

    it('fails "kept apart" when one is taken for the other (no write, the other\'s target)', () => {
      expect(failed(withCollision('7', []))).toContain(
        'commands that share an id across sources are kept apart (ledger and outcomes)',
      );
    });
  });

  describe("when a scoped source's command outside its scope was applied, or one inside refused for scope", () => {
    const SCOPE =
      "a scoped source's command outside its scope is rejected as such, never applied, never written again";
    // beta's pay_1 on its scoped key (issue 34), known by source + id (issue 35).
    const betaCommand = () => buildCommand({ source: 'beta', key: 'beta/pay_1', outsideScope: true });
    const betaEvent = () =>
      message(
        'commands.rental-payments',
        {
          id: 'ev-1',
          type: 'rentbridge.command.rental-payment',
          source: '/webhooks/pms/beta',
          data: { payment_id: 'pay_1', amount_cents: 100_001 },
        },
        { 'webhook-id': 'msg_1' },
      );
    const betaOutcome = (status: string) =>
      message('outcomes.rental-payments', {
        id: 'out-1',
        type: 'rentbridge.outcome.rental-payment',
        data: { command_id: 'pay_1', command_source: 'beta', status, target_id: '7' },
      });
    const letter = (message: string) =>
      ({
        ...betaEvent(),
        topic: 'chaos.commands.rental-payments.dlq',
        headers: {
          'dlq-reason': 'rejected',
          'dlq-command-id': 'pay_1',
          'dlq-command-source': 'beta',
          'dlq-error-message': message,
        },
      }) satisfies ReadMessage;
    const betaEvidence = (overrides: Partial<Evidence>, outsideScope: boolean) => {
      const evidence = buildEvidence({
        commandStates: new Map([['beta/pay_1', 'rejected']]),
        ...overrides,
      });
      evidence.load.webhooks = [buildHook({ source: 'beta', commandKey: 'beta/pay_1' })];
      evidence.load.commands = new Map([['beta/pay_1', { ...betaCommand(), outsideScope }]]);
      return evidence;
    };

    it('fails the scope check', () => {
      const applied = betaEvidence(
        {
          commandStates: new Map([['beta/pay_1', 'applied']]),
          topics: new Map([
            ['commands.rental-payments', [betaEvent()]],
            ['outcomes.rental-payments', [betaOutcome('applied')]],
          ]),
        },
        true,
      );
      expect(failed(applied)).toContain(SCOPE);

      const refusedInside = betaEvidence(
        {
          ledger: [],
          topics: new Map([
            ['commands.rental-payments', [betaEvent()]],
            ['outcomes.rental-payments', [betaOutcome('rejected')]],
            ['commands.rental-payments.dlq', [letter('the record is outside the scope of source "beta"')]],
          ]),
        },
        false,
      );
      expect(failed(refusedInside)).toEqual([SCOPE]);

      const writtenAgain = betaEvidence(
        {
          ledger: [
            write({ applied: false, status: 404 }),
            write({ applied: false, status: 404, request_id: 'pay_1.a2' }),
          ],
          topics: new Map([
            ['commands.rental-payments', [betaEvent()]],
            ['outcomes.rental-payments', [betaOutcome('rejected')]],
            ['commands.rental-payments.dlq', [letter('the record is outside the scope of source "beta"')]],
          ]),
        },
        true,
      );
      expect(failed(writtenAgain)).toEqual([SCOPE]);
    });

    it('passes when it ended rejected as outside the scope, with no applied write', () => {
      const kept = betaEvidence(
        {
          ledger: [write({ applied: false, status: 404 })],
          topics: new Map([
            ['commands.rental-payments', [betaEvent()]],
            ['outcomes.rental-payments', [betaOutcome('rejected')]],
            ['commands.rental-payments.dlq', [letter('the record is outside the scope of source "beta"')]],
          ]),
        },
        true,
      );
      expect(failed(kept)).toEqual([]);
    });

    it('counts only a refusal whose answer reached rentbridge: a timed-out write refused is retried', () => {
      // The sandbox refused .a1 after rentbridge's time-out; rentbridge wrote .a2 and saw its 404.
      const retried = (refusalsSeen: string[]) =>
        betaEvidence(
          {
            ledger: [
              write({ applied: false, status: 404, request_id: 'pay_1.a1' }),
              write({ applied: false, status: 404, request_id: 'pay_1.a2' }),
            ],
            topics: new Map([
              ['commands.rental-payments', [betaEvent()]],
              ['outcomes.rental-payments', [betaOutcome('rejected')]],
              ['commands.rental-payments.dlq', [letter('the record is outside the scope of source "beta"')]],
            ]),
            refusalsSeen: new Set(refusalsSeen),
          },
          true,
        );
      expect(failed(retried(['pay_1.a2']))).toEqual([]);
      expect(failed(retried(['pay_1.a1', 'pay_1.a2']))).toEqual([SCOPE]);
    });
  });

  describe('when a replay of an acknowledged webhook was not answered as a duplicate', () => {
    it('fails the replay check', () => {
      const evidence = buildEvidence();
      evidence.load.webhooks.push(buildHook({ kind: 'replay', duplicate: false }));
      expect(failed(evidence)).toEqual([
        'a replayed acknowledged webhook is answered duplicate (nothing published)',
      ]);
    });
  });

  describe('when a registration outcome names the wrong customer', () => {
    const registration = (data: Record<string, unknown>) => {
      const evidence = buildEvidence({
        ledger: [
          write(),
          write({
            path: '/v1/partners/customers',
            request_id: 'reg_1.a1',
            body: { email: 'ada@example.com' },
          }),
        ],
        customers: [
          { id: 41, email: 'someone@example.com' },
          { id: 42, email: 'ada@example.com' },
        ],
      });
      evidence.load.commands.set(
        'reg_1',
        buildCommand({
          commandId: 'reg_1',
          key: 'reg_1',
          kind: 'registration',
          topic: 'commands.customer-registrations',
          email: 'ada@example.com',
          targetId: 'ada@example.com',
          amountCents: undefined,
        }),
      );
      evidence.topics.set('outcomes.customer-registrations', [
        message('outcomes.customer-registrations', {
          id: 'outcome.reg_1',
          type: 'rentbridge.outcome.customer-registration',
          data: { command_id: 'reg_1', ...data },
        }),
      ]);
      return evidence;
    };
    const CHECK = 'registration outcomes name the right customer (sandbox ledger)';

    it('passes when an applied registration names the customer it created', () => {
      expect(failed(registration({ status: 'applied', partner_customer_id: '42' }))).toEqual([]);
    });

    it('fails when a rejected registration names the customer its own write created', () => {
      expect(failed(registration({ status: 'rejected', existing_customer_id: '42' }))).toEqual([CHECK]);
    });

    it('fails when an applied registration names someone else', () => {
      expect(failed(registration({ status: 'applied', partner_customer_id: '41' }))).toEqual([CHECK]);
    });
  });
});
