import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config/config.js';
import { createLogger } from '../src/logger.js';
import { runCli } from './support/cli.js';

describe('configuration', () => {
  describe('when nothing is set', () => {
    it('uses the documented defaults', () => {
      const config = loadConfig({});
      expect(config.KAFKA_BROKERS).toEqual(['127.0.0.1:9092']);
      expect(config.PARTNER_RATE_LIMIT_PER_MINUTE).toBe(650);
      expect(config.HTTP_PORT).toBe(8080);
      expect(config.PARTNER_API_URL).toBeUndefined();
      expect(Object.isFrozen(config)).toBe(true);
    });
  });

  describe('when values are bad', () => {
    it('names every bad variable and what is wrong', () => {
      let error: unknown;
      try {
        loadConfig({ KAFKA_BROKERS: 'localhost', HTTP_PORT: 'eighty', PMS_WEBHOOK_SECRETS: '{nope' });
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(ConfigError);
      const problems = (error as ConfigError).problems.join('\n');
      expect(problems).toMatch(/KAFKA_BROKERS: .*host:port/);
      expect(problems).toMatch(/HTTP_PORT/);
      expect(problems).toMatch(/PMS_WEBHOOK_SECRETS: must be JSON/);
    });

    it('refuses the sandbox secret against a real Partner API', () => {
      expect(() => loadConfig({ PARTNER_API_URL: 'https://api.example.com' })).toThrow(/PARTNER_SECRET_KEY/);
      // compose's sandbox service, on its own host, declared a sandbox: its default key is fine.
      expect(
        loadConfig({ PARTNER_API_URL: 'http://sandbox:4010', PARTNER_ENVIRONMENT: 'sandbox' })
          .PARTNER_API_URL,
      ).toBe('http://sandbox:4010');
    });
  });

  describe('when a PMS source has a Partner API key of its own', () => {
    const secrets = JSON.stringify({ acme: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'] });

    it('parses PMS_PARTNER_KEYS per source', () => {
      const config = loadConfig({
        PMS_WEBHOOK_SECRETS: secrets,
        PMS_PARTNER_KEYS: JSON.stringify({ acme: { access_key: 'ak', secret_key: 'sk', scoped: true } }),
      });
      expect(config.PMS_PARTNER_KEYS).toEqual({ acme: { access_key: 'ak', secret_key: 'sk', scoped: true } });
      expect(loadConfig({}).PMS_PARTNER_KEYS).toEqual({});
    });

    it('refuses a key for a source no PMS signs for, a missing secret, or bad JSON, never echoing the value', () => {
      const problemsOf = (value: string) => {
        try {
          loadConfig({ PMS_WEBHOOK_SECRETS: secrets, PMS_PARTNER_KEYS: value });
        } catch (e) {
          return (e as ConfigError).problems.join('\n');
        }
        return '';
      };
      expect(problemsOf(JSON.stringify({ beta: { access_key: 'ak', secret_key: 'sk_live_1' } }))).toMatch(
        /PMS_PARTNER_KEYS: source "beta" has no PMS_WEBHOOK_SECRETS entry/,
      );
      expect(problemsOf(JSON.stringify({ acme: { access_key: 'ak' } }))).toMatch(/PMS_PARTNER_KEYS/);
      const bad = problemsOf('{"acme":{"secret_key":"sk_live_2"');
      expect(bad).toMatch(/PMS_PARTNER_KEYS: must be JSON/);
      expect(bad).not.toContain('sk_live_2');
    });
  });

  describe('when PMS_WEIGHTS gives sources their weights in the budget', () => {
    it('parses them, and names what is wrong with a bad one', () => {
      expect(loadConfig({ PMS_WEIGHTS: '{"acme":3,"globex":0.5}' }).PMS_WEIGHTS).toEqual({
        acme: 3,
        globex: 0.5,
      });
      expect(loadConfig({}).PMS_WEIGHTS).toEqual({});
      const problemsOf = (value: string) => {
        try {
          loadConfig({ PMS_WEIGHTS: value });
        } catch (e) {
          return (e as ConfigError).problems.join('\n');
        }
        return '';
      };
      expect(problemsOf('{"acme":3')).toMatch(/PMS_WEIGHTS: must be JSON, e.g. \{"acme":3\}/);
      expect(problemsOf('{"acme":0}')).toMatch(/PMS_WEIGHTS.*a weight above 0/);
      expect(problemsOf('{"acme":"3"}')).toMatch(/PMS_WEIGHTS/);
      expect(problemsOf('{"a b":1}')).toMatch(/PMS_WEIGHTS: "a b" is not a source name/);
    });
  });

  describe('rentbridge with a bad KAFKA_BROKERS', () => {
    it('exits 2 naming the variable', async () => {
      const result = await runCli(['relay'], { KAFKA_BROKERS: 'not a broker' });
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(/KAFKA_BROKERS/);
    });
  });

  describe('rentbridge with an unknown command', () => {
    it('exits 2 and points at --help', async () => {
      const result = await runCli(['frobnicate']);
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(/unknown command/);
    });
  });
});

/** A log destination that keeps each line written to it. */
function captureLines(): { lines: string[]; sink: Writable } {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(chunk.toString());
      done();
    },
  });
  return { lines, sink };
}

describe('the root logger', () => {
  it('redacts secrets wherever they travel', () => {
    const { lines, sink } = captureLines();
    const logger = createLogger({ level: 'info' }, sink);
    logger.info(
      {
        headers: { authorization: 'Bearer eyJhbGciOi.secret', 'x-access-token': 'ak_live' },
        body: { access_key: 'ak', secret_key: 'sk_live_123' },
        config: {
          PARTNER_SECRET_KEY: 'sk_live_456',
          OPS_TOKEN: 'ops-token-0123456789',
          PMS_PARTNER_KEYS: { acme: { access_key: 'ak', secret_key: 'sk_source_789' } },
        },
        token: 'tok_abc',
      },
      'request',
    );
    const out = lines.join('');
    for (const secret of [
      'eyJhbGciOi.secret',
      'ak_live',
      'sk_live_123',
      'sk_live_456',
      'sk_source_789',
      'ops-token-0123456789',
      'tok_abc',
    ]) {
      expect(out).not.toContain(secret);
    }
    expect(out).toContain('[redacted]');
    expect(out).toContain('"access_key":"ak"');
  });

  it("redacts secrets deep in objects, in errors and in child bindings, without changing the caller's objects", () => {
    const { lines, sink } = captureLines();
    const logger = createLogger({ level: 'info' }, sink)
      .child({ component: 'test' })
      .child({ config: { DATABASE_URL: 'postgres://u:pw_db@h/d' } });
    const fields = { a: { b: { c: { d: [{ token: 'tok_deep' }] } } }, eventId: 'evt-1' };
    const error = Object.assign(new Error('refused'), { headers: { authorization: 'Bearer jwt_in_error' } });
    logger.info(fields, 'deep');
    logger.error({ err: error }, 'failed');
    const out = lines.join('');
    for (const secret of ['pw_db', 'tok_deep', 'jwt_in_error']) expect(out).not.toContain(secret);
    expect(out).toContain('"eventId":"evt-1"');
    // The error keeps its message and stack; the caller's objects are untouched.
    const failed = JSON.parse(lines[1]!) as { err: { message: string; stack: string } };
    expect(failed.err.message).toBe('refused');
    expect(failed.err.stack).toContain('Error: refused');
    expect(fields.a.b.c.d[0]!.token).toBe('tok_deep');
    expect(error.headers.authorization).toBe('Bearer jwt_in_error');
  });
});
