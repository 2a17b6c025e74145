import { logLevel } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { kafkaLogMethod } from '../../src/kafka/kafka-log-level.js';

describe('kafkaLogMethod', () => {
  describe('when the broker answers that a new topic has no leader yet', () => {
    it('logs it at debug: kafkajs retries it itself, and the caller reports what runs out', () => {
      for (const error of [
        'This server is not the leader for that topic-partition',
        'There is no leader for this topic-partition as we are in the middle of a leadership election',
      ]) {
        expect(kafkaLogMethod(logLevel.ERROR, 'Response Produce(key: 0, version: 7)', { error })).toBe(
          'debug',
        );
      }
    });
  });

  describe("when a new consumer group's coordinator is not chosen yet (a healthy first start)", () => {
    it('logs it at debug: kafkajs finds the coordinator and joins again itself', () => {
      for (const error of [
        'The group coordinator is not available',
        'This is not the correct coordinator for this group',
        "The coordinator is loading and hence can't process requests for this group",
      ]) {
        expect(
          kafkaLogMethod(logLevel.ERROR, 'Response FindCoordinator(key: 10, version: 2)', { error }),
        ).toBe('debug');
      }
    });
  });

  describe('when kafkajs notes the limited retries of the idempotent producer', () => {
    it('logs it at debug: the limit is deliberate', () => {
      expect(
        kafkaLogMethod(
          logLevel.WARN,
          'Limiting retries for the idempotent producer may invalidate EoS guarantees',
          {},
        ),
      ).toBe('debug');
    });
  });

  describe('when something else goes wrong', () => {
    it("keeps kafkajs's level", () => {
      expect(
        kafkaLogMethod(logLevel.ERROR, 'Response Produce(key: 0, version: 7)', {
          error: 'The request included a message larger than the max message size the server will accept',
        }),
      ).toBe('error');
      expect(
        kafkaLogMethod(logLevel.ERROR, 'Failed to connect to seed broker, trying another broker', {}),
      ).toBe('error');
      expect(kafkaLogMethod(logLevel.WARN, 'The group is rebalancing, re-joining', {})).toBe('warn');
    });
  });
});
