import { describe, expect, it } from 'vitest';
import { guessCommand } from '../../src/command-consumer/run-command.js';
import { commandTypeSchemas } from '../../src/contracts/published-schemas.js';
import { commandTypeByName, commandTypeOfKind } from '../../src/command-types/command-types.js';
import {
  commandContracts,
  commandIdOf,
  COMMAND_TYPES,
  contractByName,
  contractOfEvent,
  contractOfKind,
  contractOfPhysicalTopic,
  contractOfPmsEvent,
  looseIdsOf,
  targetIdOf,
} from '../../src/contracts/command-contracts.js';
import { COMMAND_KINDS, OUTCOME_TYPES } from '../../src/contracts/outcomes.js';
import { PMS_EVENT_TYPES } from '../../src/contracts/pms-events.js';
import { allTopics, COMMAND_TOPICS, TOPICS } from '../../src/kafka/topics.js';
import { routePmsEvent } from '../../src/receiver/route-event.js';

/** One valid command of each type, as a PMS sends it. */
const SAMPLES: Record<string, Record<string, unknown>> = {
  application_decision: { decision_id: 'dec-1', application_id: 917, decision: 'approve' },
  rental_payment: { payment_id: 'pay-1', enrollment_id: '42', amount_cents: 1000, paid_on: '2026-11-01' },
  customer_registration: {
    registration_id: 'reg-1',
    pms_reference: 'tenant-7',
    first_name: 'Ada',
    last_name: 'L',
    email: 'Ada@Example.com',
    phone: '5551234',
  },
  enrollment: { enrollment_request_id: 'enr-1', customer_id: 'c-9' },
};
const EXPECTED: Record<string, { id: string; target: string }> = {
  application_decision: { id: 'dec-1', target: '917' },
  rental_payment: { id: 'pay-1', target: '42' },
  customer_registration: { id: 'reg-1', target: 'ada@example.com' },
  enrollment: { id: 'enr-1', target: 'c-9' },
};

const CONTRACTS = commandContracts();

describe('the list of command types', () => {
  describe('when it is read against the published contracts', () => {
    it('has one row per command kind of the outcome contract, and every kind a row', () => {
      expect(CONTRACTS.map((t) => t.kind).sort()).toEqual([...COMMAND_KINDS].sort());
    });

    it('names the topics, CloudEvent types and PMS event types the contracts list, each once', () => {
      expect(CONTRACTS.map((t) => t.topic).sort()).toEqual([...COMMAND_TOPICS].sort());
      expect(CONTRACTS.map((t) => t.eventType).sort()).toEqual(Object.values(COMMAND_TYPES).sort());
      expect(CONTRACTS.map((t) => t.pmsEventType).sort()).toEqual(Object.values(PMS_EVENT_TYPES).sort());
      for (const type of CONTRACTS) {
        expect(type.outcomeType).toBe(OUTCOME_TYPES[type.kind]);
        expect(allTopics()).toEqual(
          expect.arrayContaining([type.topic, type.outcomeTopic, TOPICS.dlq(type.topic)]),
        );
      }
    });

    it('declares an id field its schema requires, a different one per type', () => {
      const fields = CONTRACTS.map((t) => t.idField);
      expect(new Set(fields).size).toBe(fields.length);
      for (const type of CONTRACTS) {
        const { [type.idField]: _id, ...withoutId } = SAMPLES[type.kind]!;
        expect(type.schema.safeParse(SAMPLES[type.kind]).success, type.kind).toBe(true);
        expect(type.schema.safeParse(withoutId).success, type.kind).toBe(false);
      }
    });
  });

  describe('when an entry is looked up', () => {
    it('finds it by name, kind, topic (with its prefix), CloudEvent type and PMS event type', () => {
      for (const type of CONTRACTS) {
        expect(contractByName(type.name)).toBe(type);
        expect(contractOfKind(type.kind)).toBe(type);
        expect(contractOfPhysicalTopic(`acme.${type.topic}`, 'acme.')).toBe(type);
        expect(contractOfEvent(type.eventType)).toBe(type);
        expect(contractOfPmsEvent(type.pmsEventType)).toBe(type);
      }
      expect(contractOfPhysicalTopic('acme.inbound.unrouted', 'acme.')).toBeUndefined();
      expect(contractOfPmsEvent('tenant.moved_out')).toBeUndefined();
    });

    it("gives the consumer each entry with its behaviour: the entry's names and a read-back", () => {
      for (const contract of CONTRACTS) {
        const type = commandTypeByName(contract.name)!;
        expect(type).toMatchObject({ ...contract, target: contract.target });
        expect(typeof type.readBack).toBe('function');
        expect(commandTypeOfKind(contract.kind)).toBe(type);
      }
      expect(commandTypeByName('dead-letters')).toBeUndefined();
    });
  });

  describe('when ids are read from a command', () => {
    it('reads the command id and target from the fields the row declares', () => {
      for (const type of CONTRACTS) {
        const command = type.schema.parse(SAMPLES[type.kind]);
        expect(commandIdOf(type, command)).toBe(EXPECTED[type.kind]!.id);
        expect(targetIdOf(type, command)).toBe(EXPECTED[type.kind]!.target);
        expect(looseIdsOf(type, SAMPLES[type.kind]!)).toEqual({
          commandId: EXPECTED[type.kind]!.id,
          targetId: EXPECTED[type.kind]!.target,
        });
      }
    });
  });

  describe('when a PMS webhook of each type is routed', () => {
    it("publishes its command on the row's topic, keyed by its target, with its id as subject", () => {
      for (const type of CONTRACTS) {
        const item = routePmsEvent({
          source: 'pms:acme',
          path: '/webhooks/pms/acme',
          webhookId: 'msg_1',
          requestId: 'req-1',
          body: { type: type.pmsEventType, data: SAMPLES[type.kind] },
        });
        expect(item.kind).toBe('message');
        if (item.kind !== 'message') continue;
        expect(item.message).toMatchObject({
          topic: type.topic,
          type: type.eventType,
          key: EXPECTED[type.kind]!.target,
          subject: EXPECTED[type.kind]!.id,
        });
      }
    });
  });

  describe('when a message fails its type or schema', () => {
    const value = (event: unknown) => Buffer.from(JSON.stringify(event));

    it("guesses the id and target by the topic's row", () => {
      const payments = commandTypeOfKind('rental_payment')!;
      const guess = guessCommand(
        payments,
        value({ source: '/webhooks/pms/acme', type: 'x', data: { payment_id: 'p-9', enrollment_id: 5 } }),
      );
      expect(guess).toEqual({ source: 'acme', commandId: 'p-9', targetId: '5' });
    });

    it("reads a command of another type by that type's row (a command on the wrong topic)", () => {
      const payments = commandTypeOfKind('rental_payment')!;
      const guess = guessCommand(
        payments,
        value({
          source: '/test',
          type: COMMAND_TYPES.customerRegistration,
          data: { registration_id: 'r-1', email: 'X@Y.example' },
        }),
      );
      expect(guess).toEqual({ source: '/test', commandId: 'r-1', targetId: 'x@y.example' });
    });

    it('guesses nothing from bytes that are not JSON', () => {
      expect(guessCommand(CONTRACTS[0]!, Buffer.from('{not json'))).toEqual({
        source: null,
        commandId: null,
        targetId: null,
      });
    });
  });

  describe('when the JSON Schemas are exported', () => {
    it("names each type's command and PMS webhook as docs/schemas always has", () => {
      const names = Object.keys(commandTypeSchemas());
      expect(names).toHaveLength(2 * CONTRACTS.length);
      expect(names).toEqual(
        expect.arrayContaining([
          'application-decision-command',
          'customer-registration-command',
          'enrollment-command',
          'pms-application-decided',
          'pms-customer-registration-requested',
          'pms-enrollment-requested',
          'pms-rent-payment-received',
          'rental-payment-command',
        ]),
      );
    });
  });
});
