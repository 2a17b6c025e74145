import { hostname, userInfo } from 'node:os';
import { execFile } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Producer } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runDlq, type DlqDeps } from '../../src/cli/commands/dlq.js';
import { UsageError } from '../../src/cli/process.js';
import { getDeadLetter } from '../../src/dead-letters/dead-letter-repository.js';
import { TOPICS } from '../../src/kafka/topics.js';
import { createLogger } from '../../src/logger.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { createTestKafka, type TestKafka } from '../support/kafka.js';
import { buildDecisionLetter, seedGuardRow, seedLetter } from './build-dead-letter.js';

describe('rentbridge dlq', () => {
  let database: TestDatabase;
  let kafka: TestKafka;
  let producer: Producer | undefined;
  let output: string[];
  let deps: DlqDeps;

  /** `rentbridge …` through main.ts, as a user runs it. */
  async function cli(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    return promisify(execFile)(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], {
      env: {
        ...process.env,
        DATABASE_URL: database.url,
        KAFKA_TOPIC_PREFIX: kafka.prefix,
        LOG_LEVEL: 'silent',
      },
    }).then(
      ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
      (error: { code: number; stdout: string; stderr: string }) => error,
    );
  }

  async function run(sub: string, ...args: string[]) {
    output = [];
    const code = await runDlq(sub, args, deps);
    return { code, text: output.join('\n') };
  }

  beforeAll(async () => {
    database = await createTestDatabase();
    kafka = createTestKafka();
    await kafka.createTopics([TOPICS.applicationDecisions]);
    deps = {
      db: database.db,
      topicPrefix: kafka.prefix,
      logger: createLogger({ level: 'silent' }),
      async producer() {
        producer ??= kafka.kafka.producer();
        await producer.connect();
        return producer;
      },
      out: (text) => output.push(text),
      isTTY: false,
      confirm: () => Promise.resolve(false),
      env: { USER: 'cli-tester' },
    };
  });
  afterAll(async () => {
    await producer?.disconnect();
    await kafka.close();
    await database.drop();
  });

  describe('when listing', () => {
    it('prints a table and the counts, or JSON, filtered', async () => {
      const a = buildDecisionLetter(kafka.prefix, {
        reason: 'rejected',
        errorCode: 'invalid_state_transition',
      });
      const idA = await seedLetter(database.db, kafka.prefix, a);
      await seedLetter(
        database.db,
        kafka.prefix,
        buildDecisionLetter(kafka.prefix, { reason: 'unverified' }),
      );

      const table = await run('list', '--reason', 'rejected');
      expect(table.code).toBe(0);
      expect(table.text).toMatch(/^ID\s+STATE\s+REASON/);
      expect(table.text).toContain(a.decisionId.slice(0, 20));
      expect(table.text).toContain(
        '1 matching · by reason: rejected 1 · by code: invalid_state_transition 1',
      );

      const json = JSON.parse((await run('list', '--json', '--command-id', a.decisionId)).text);
      expect(json.items.map((i: { id: number }) => i.id)).toEqual([idA]);
      expect(json.counts.total).toBe(1);
    });

    it('stops with a usage error on a bad filter', async () => {
      await expect(run('list', '--since', 'yesterday-ish')).rejects.toThrow(UsageError);
      await expect(run('list', '--state', 'nope')).rejects.toThrow(UsageError);
    });
  });

  describe('when showing a letter', () => {
    it('prints the value, headers, partner request ids and the guard state with its attempts', async () => {
      const letter = buildDecisionLetter(kafka.prefix);
      const id = await seedLetter(database.db, kafka.prefix, letter);
      await seedGuardRow(database.db, letter.decisionId, 'exhausted');
      const { code, text } = await run('show', String(id));
      expect(code).toBe(0);
      expect(text).toContain(`"decision_id": "${letter.decisionId}"`);
      expect(text).toContain('dlq-reason: unverified');
      expect(text).toContain(letter.info.partnerRequestIds[0]);
      expect(text).toMatch(/Guard state\n {2}exhausted/);
      expect(text).toContain('#2 read_back');
    });
  });

  describe('when redriving', () => {
    it('says per letter what a dry run would do and changes nothing', async () => {
      const applied = buildDecisionLetter(kafka.prefix);
      const idApplied = await seedLetter(database.db, kafka.prefix, applied);
      await seedGuardRow(database.db, applied.decisionId, 'already_applied');
      const idNew = await seedLetter(database.db, kafka.prefix, buildDecisionLetter(kafka.prefix));

      const { code, text } = await run('redrive', String(idApplied), String(idNew), '--dry-run');
      expect(code).toBe(0);
      expect(text).toContain(`#${idApplied} would close as applied`);
      expect(text).toContain(`#${idNew} would send`);
      expect((await getDeadLetter(database.db, idApplied))?.state).toBe('open');
    });

    it('refuses many letters without --yes when not on a terminal', async () => {
      await expect(run('redrive', ...Array.from({ length: 11 }, (_, i) => String(i + 1)))).rejects.toThrow(
        /without --yes/,
      );
    });

    it('redrives with a correction file and records the actor', async () => {
      const letter = buildDecisionLetter(kafka.prefix);
      const id = await seedLetter(database.db, kafka.prefix, letter);
      const dir = await mkdtemp(join(tmpdir(), 'dlq-'));
      const bad = join(dir, 'bad.json');
      await writeFile(bad, JSON.stringify({ decision_id: letter.decisionId, decision: 'approve' }));
      const invalid = await run('redrive', String(id), '--correct-file', bad);
      expect(invalid.code).toBe(1);
      expect(invalid.text).toMatch(/invalid: invalid commands.application-decisions command: application_id/);

      const good = join(dir, 'good.json');
      await writeFile(
        good,
        JSON.stringify({
          decision_id: letter.decisionId,
          application_id: letter.applicationId,
          decision: 'decline',
        }),
      );
      const sent = await run('redrive', String(id), '--correct-file', good, '--note', 'wrong decision');
      expect(sent.code).toBe(0);
      expect(sent.text).toContain(`#${id} send: send corrected value`);
      // The operating system's user and host, not $USER (set to cli-tester here): #44 item 4.
      const redriven = await getDeadLetter(database.db, id);
      expect(redriven).toMatchObject({
        state: 'redriven',
        resolvedBy: `cli:${userInfo().username}@${hostname()}`,
      });
    });

    it('redrives every letter matching --where filters', async () => {
      const letter = buildDecisionLetter(kafka.prefix, { errorCode: 'where_code' });
      const id = await seedLetter(database.db, kafka.prefix, letter);
      const { text } = await run('redrive', '--where', '--code', 'where_code', '--actor', 'eve');
      expect(text).toContain(`#${id} send`);
      expect(await getDeadLetter(database.db, id)).toMatchObject({
        state: 'redriven',
        resolvedBy: `cli:${userInfo().username}@${hostname()} (as eve)`,
      });
    });
  });

  describe('when discarding', () => {
    it('needs --note', async () => {
      await expect(run('discard', '1')).rejects.toThrow(/needs --note/);
    });

    it('exits 2 from the real command line without --note', async () => {
      const result = await cli('dlq', 'discard', '1');
      expect(result.code).toBe(2);
      expect(result.stderr).toContain('needs --note');
    });

    it('discards with --note, and with --reason (its old name) all the same', async () => {
      const byNote = await seedLetter(database.db, kafka.prefix, buildDecisionLetter(kafka.prefix));
      const byReason = await seedLetter(database.db, kafka.prefix, buildDecisionLetter(kafka.prefix));
      expect(
        (await cli('dlq', 'discard', String(byNote), '--note', 'test data', '--actor', 'eve')).code,
      ).toBe(0);
      expect(
        (await cli('dlq', 'discard', String(byReason), '--reason', 'test data', '--actor', 'eve')).code,
      ).toBe(0);
      for (const id of [byNote, byReason])
        expect(await getDeadLetter(database.db, id)).toMatchObject({ state: 'discarded' });
    });
  });

  describe('when run from the real command line', () => {
    it('passes every option through to dlq list', async () => {
      const id = await seedLetter(
        database.db,
        kafka.prefix,
        buildDecisionLetter(kafka.prefix, { errorCode: 'via_cli' }),
      );
      const result = await cli('dlq', 'list', '--code', 'via_cli', '--limit', '5', '--json');
      expect(result.code).toBe(0);
      expect(JSON.parse(result.stdout).items.map((i: { id: number }) => i.id)).toEqual([id]);
    });
  });
});
