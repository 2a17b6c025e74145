import { KafkaJSConnectionError, KafkaJSNumberOfRetriesExceeded } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { AppError, isRetriable } from '../../src/errors.js';
import { GuardBusyError, GuardInterruptedError } from '../../src/guard/index.js';
import {
  InvalidPathIdError,
  PartnerApiError,
  PartnerNetworkError,
  PartnerResponseError,
  PartnerTimeoutError,
} from '../../src/partner/index.js';

const api = (status: number, code: string) =>
  new PartnerApiError(
    { status, code, requestId: 'r1', message: code, method: 'GET', endpoint: 'GET /x' },
    { repeatable: false },
  );

const withCode = (message: string, code: string, name = 'Error') =>
  Object.assign(new Error(message), { code, name });

describe('the one retry verdict (isRetriable)', () => {
  describe('when the world did not answer', () => {
    it.each([
      ['the guard could not decide', new GuardInterruptedError('read failed')],
      ['another process holds the command', new GuardBusyError('busy')],
      ['a 429 from a step', api(429, 'rate_limited')],
      ['a 5xx from a step', api(503, 'request_timeout')],
      ['a 409 lock_failed from a step', api(409, 'lock_failed')],
      ['no answer from the Partner API', new PartnerNetworkError('reset', { requestId: 'r' })],
      ['a Partner API time-out', new PartnerTimeoutError('slow', { requestId: 'r', timeoutMs: 1 })],
      ['Kafka away', new KafkaJSConnectionError('Connection error')],
      [
        'Kafka retries exhausted',
        new KafkaJSNumberOfRetriesExceeded(new Error('x'), { retryCount: 5, retryTime: 300 }),
      ],
      ['PostgreSQL refusing connections', withCode('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED')],
      ['PostgreSQL shutting down', withCode('terminating connection', '57P01')],
      ['Prisma cannot reach the database', withCode("Can't reach database server", 'P1001')],
      ['a Prisma pool time-out', withCode('Timed out fetching a new connection', 'P2024')],
      ['a lost node-postgres connection', new Error('Connection terminated unexpectedly')],
      [
        'a database error wrapped in ours',
        new Error('lock failed', { cause: withCode('connect ECONNREFUSED', 'ECONNREFUSED') }),
      ],
      [
        'an error of ours that says it may succeed later',
        new AppError(503, 'busy', 'x', { retriable: true }),
      ],
      ['a 2xx answer the client did not understand', new PartnerResponseError('shape', { requestId: 'r' })],
      ['a 401 that survived the token renewal', api(401, 'unauthenticated')],
    ])('tries again later: %s', (_what, error) => {
      expect(isRetriable(error)).toBe(true);
    });
  });

  describe('when the code has a bug or a refusal was not expected', () => {
    it.each([
      ['a TypeError', new TypeError("Cannot read properties of undefined (reading 'id')")],
      ['a ReferenceError', new ReferenceError('x is not defined')],
      ['a RangeError', new RangeError('Invalid time value')],
      ['a plain Error of our own', new Error('command 42 not found')],
      ['a 404 from a step (a refusal, not a failure of the world)', api(404, 'not_found')],
      ['a 409 invalid_state_transition from a step', api(409, 'invalid_state_transition')],
      ['something thrown that is not an Error', 'boom'],
      ['an error of ours that says it will fail again', new AppError(400, 'bad', 'x')],
      ['an id that cannot be a path segment', new InvalidPathIdError('..')],
      [
        'a refusal wrapped in a plain error',
        new Error('step failed', { cause: api(422, 'validation_error') }),
      ],
    ])('does not retry it: %s', (_what, error) => {
      expect(isRetriable(error)).toBe(false);
    });
  });
});
