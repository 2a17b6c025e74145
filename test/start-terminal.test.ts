import { randomBytes } from 'node:crypto';
import { spawn as spawnPty, type IPty } from '@lydell/node-pty';
import pg from 'pg';
import { afterAll, describe, expect, inject, it, vi } from 'vitest';
import { parseDatabaseUrl, quoteIdent, withSchema } from '../src/db/database-url.js';
import { ROOT, runCli } from './support/cli.js';
import { freePort } from './support/free-port.js';

/**
 * Issue 41: the terminal is for people. On a terminal (a pseudo-terminal here) rentbridge writes
 * short readable lines and the banner last; on a pipe, JSON.
 */

const schemas: string[] = [];
function scratch() {
  const schema = `s_${randomBytes(5).toString('hex')}`;
  schemas.push(schema);
  return {
    DATABASE_URL: withSchema(inject('databaseUrl'), schema),
    KAFKA_BROKERS: inject('kafkaBrokers'),
    KAFKA_TOPIC_PREFIX: `${schema}.`,
  };
}

/** A run of `rentbridge <args>` in a pseudo-terminal: everything it wrote, as the terminal got it. */
function inTerminal(args: string[], env: Record<string, string>) {
  const term: IPty = spawnPty(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], {
    cwd: ROOT,
    cols: 160,
    rows: 50,
    env: { ...(process.env as Record<string, string>), LOG_LEVEL: 'info', LOG_FORMAT: '', ...env },
  });
  let output = '';
  term.onData((d) => (output += d));
  const exited = new Promise<number>((resolve) => term.onExit(({ exitCode }) => resolve(exitCode)));
  return { term, exited, output: () => output.replace(/\r/g, '') };
}

const isJson = (line: string) => {
  try {
    return typeof JSON.parse(line) === 'object';
  } catch {
    return false;
  }
};

afterAll(async () => {
  const client = new pg.Client({
    connectionString: parseDatabaseUrl(inject('databaseUrl')).connectionString,
  });
  await client.connect();
  for (const s of schemas) await client.query(`DROP SCHEMA IF EXISTS ${quoteIdent(s)} CASCADE`);
  await client.end();
});

describe('the terminal', () => {
  describe('when rentbridge start runs in a terminal', () => {
    let run: ReturnType<typeof inTerminal> | undefined;
    afterAll(async () => {
      if (!run) return;
      run.term.kill('SIGTERM');
      await Promise.race([run.exited, new Promise((r) => setTimeout(r, 30_000))]);
      run.term.kill('SIGKILL');
    });

    it('writes short readable lines, then the banner last, once ready', async () => {
      const [http, sandbox] = [await freePort(), await freePort()];
      run = inTerminal(['start', '--demo'], {
        ...scratch(),
        HTTP_PORT: String(http),
        SANDBOX_PORT: String(sandbox),
        OPS_TOKEN: '',
        PARTNER_API_URL: '',
      });
      const current = run;
      await vi.waitFor(() => expect(current.output()).toContain('try next:'), {
        timeout: 120_000,
        interval: 500,
      });
      const text = current.output();
      const [before] = text.split('rentbridge is running');
      const lines = before!.split('\n').filter((l) => l.trim() && !l.startsWith('─'));
      expect(lines.length).toBeGreaterThan(0);
      // Readable: a time, a level word, a message; never a JSON object.
      for (const line of lines) {
        expect(isJson(line), line).toBe(false);
        expect(line, line).toMatch(/^\d\d:\d\d:\d\d (DEBUG|INFO |WARN |ERROR|FATAL) /);
      }
      expect(lines.filter((l) => / (ERROR|FATAL) /.test(l))).toEqual([]);
      // Last: every role said it started before the banner did.
      for (const started of ['listening', 'relay started', 'dead-letter indexer started', 'poller started'])
        expect(before, started).toContain(started);
      // The banner, once, with where to look and what to try.
      expect(text.split('rentbridge is running').length).toBe(2);
      expect(text).toContain(`console        http://localhost:${http}/ops`);
      expect(text).toContain('ops token      rentbridge-demo-ops-token');
      expect(text).toMatch(/demo secret {4}whsec_/);
      // Ready when it says so.
      const readyz = await fetch(`http://127.0.0.1:${http}/readyz`);
      expect(readyz.ok, await readyz.text()).toBe(true);
    });

    it('keeps the banner on the screen under steady demo traffic', async () => {
      const current = run!;
      expect(current.output()).toContain('try next:');
      // About ten demo events (one a second) and what comes of them: lines are counted, never a time.
      await new Promise((r) => setTimeout(r, 10_000));
      const text = current.output();
      const fromBanner = text.slice(text.indexOf('─'.repeat(72)));
      // Rows on the 160-column screen (no colours are written): a longer line wraps.
      const rows = fromBanner
        .split('\n')
        .reduce((n, line) => n + Math.max(1, Math.ceil(line.length / 160)), 0);
      // The screen is 50 rows: the banner's first rule is still on it.
      expect(rows, fromBanner).toBeLessThanOrEqual(50);
    });
  });

  describe('when output is not a terminal', () => {
    it('writes one JSON object a line', async () => {
      const result = await runCli(['migrate'], { ...scratch(), LOG_FORMAT: '' });
      expect(result.code).toBe(0);
      const lines = result.stdout.split('\n').filter((l) => l.trim());
      expect(lines.length).toBeGreaterThan(0);
      for (const line of lines) expect(isJson(line), line).toBe(true);
    });

    it('writes readable lines when LOG_FORMAT=pretty asks for them', async () => {
      const result = await runCli(['migrate'], { ...scratch(), LOG_FORMAT: 'pretty' });
      expect(result.code).toBe(0);
      const lines = result.stdout.split('\n').filter((l) => l.trim());
      expect(lines.length).toBeGreaterThan(0);
      for (const line of lines) expect(line).toMatch(/^\d\d:\d\d:\d\d INFO {2}/);
    });
  });

  describe('when a terminal asks for JSON (LOG_FORMAT=json)', () => {
    it('writes JSON all the same', async () => {
      const run = inTerminal(['migrate'], { ...scratch(), LOG_FORMAT: 'json' });
      expect(await run.exited).toBe(0);
      const lines = run
        .output()
        .split('\n')
        .filter((l) => l.trim());
      expect(lines.length).toBeGreaterThan(0);
      for (const line of lines) expect(isJson(line), line).toBe(true);
    });
  });
});
