import { describe, expect, it } from 'vitest';
import { unreachableLine, unreachableServer } from '../src/cli/server-unreachable.js';
import { runCli } from './support/cli.js';
import { freePort } from './support/free-port.js';

/**
 * After Ctrl-C on `npm start` the embedded PostgreSQL is gone: a CLI command then says so in one
 * line naming the address and where it came from, and exits 2 (never a driver's stack trace).
 * "Down" is a port where nothing listens: the shared servers are never stopped.
 */

/** One line on stderr, nothing on stdout, exit 2. */
function expectOneLine(result: { code: number | null; stdout: string; stderr: string }): string {
  expect(result.code, result.stderr).toBe(2);
  expect(result.stdout).toBe('');
  const lines = result.stderr.trim().split('\n');
  expect(lines, result.stderr).toHaveLength(1);
  expect(result.stderr).not.toMatch(/P1001|at .*\.ts:\d+|Invalid `prisma/);
  return lines[0]!;
}

describe('the CLI when a server it needs does not answer', () => {
  describe('when PostgreSQL does not answer at DATABASE_URL', () => {
    it.each(['dlq list', 'trace pay-0001', 'migrate', 'callbacks status'])(
      'rentbridge %s prints one line naming the address and DATABASE_URL, exit 2',
      async (command) => {
        const port = await freePort();
        const line = expectOneLine(
          await runCli(command.split(' '), {
            DATABASE_URL: `postgresql://postgres:s3cret@127.0.0.1:${port}/rentbridge`,
          }),
        );
        // The address only: the URL's password never shows.
        expect(line).toBe(
          `rentbridge: PostgreSQL at 127.0.0.1:${port} (DATABASE_URL) does not answer: start it, or set DATABASE_URL to one that runs`,
        );
      },
      90_000,
    );
  });

  describe('when Kafka does not answer at KAFKA_BROKERS', () => {
    it('rentbridge topics prints one line naming the brokers and KAFKA_BROKERS, exit 2', async () => {
      const port = await freePort();
      const line = expectOneLine(await runCli(['topics'], { KAFKA_BROKERS: `127.0.0.1:${port}` }, 120_000));
      expect(line).toBe(
        `rentbridge: Kafka at 127.0.0.1:${port} (KAFKA_BROKERS) does not answer: start it, or set KAFKA_BROKERS to brokers that run`,
      );
    }, 150_000);
  });

  describe('when DATABASE_URL is unset (the address npm start uses)', () => {
    it('says the embedded PostgreSQL runs only while npm start does', () => {
      const config = {
        DATABASE_URL: 'postgresql://postgres@127.0.0.1:5432/postgres',
        KAFKA_BROKERS: ['127.0.0.1:9092'],
      };
      expect(unreachableLine({ server: 'PostgreSQL' }, config, {})).toBe(
        'PostgreSQL at 127.0.0.1:5432 (the default: DATABASE_URL is unset) does not answer: the embedded PostgreSQL runs only while `npm start` does; start it, or set DATABASE_URL',
      );
      expect(unreachableLine({ server: 'Kafka' }, config, {})).toContain('KAFKA_BROKERS is unset');
    });
  });

  describe('when the failure is something else', () => {
    it('is not taken for a server away (a Partner API refusing is told where it is called)', () => {
      const config = {
        DATABASE_URL: 'postgresql://postgres@127.0.0.1:5432/postgres',
        KAFKA_BROKERS: ['127.0.0.1:9092'],
      };
      const partnerAway = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:4010'), {
        code: 'ECONNREFUSED',
        port: 4010,
      });
      expect(unreachableServer(partnerAway, config)).toBeNull();
      expect(unreachableServer(new Error('boom'), config)).toBeNull();
      const pgAway = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), {
        code: 'ECONNREFUSED',
        port: 5432,
      });
      expect(unreachableServer(new Error('wrapped', { cause: pgAway }), config)).toEqual({
        server: 'PostgreSQL',
      });
    });
  });
});
