import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { applicationDecisions } from '../../src/command-types/application-decisions/application-decisions.js';
import type { CommandConsumer } from '../../src/command-consumer/command-consumer.js';
import { TEST_MAX_PROCESSING_MS, createHarness, uid, type Harness } from './support/harness.js';

const APPROVE = (id: number) => `/partner/v1/applications/${id}/approve`;

describe('command consumers under stress', () => {
  let h: Harness;
  const running: CommandConsumer[] = [];
  let child: ChildProcess | undefined;

  beforeAll(async () => {
    h = await createHarness({ timeoutMs: 3000 });
  });
  afterEach(async () => {
    child?.kill('SIGKILL');
    child = undefined;
    for (const c of running.splice(0)) await c.stop();
    await h.control.reset();
    await h.control.setConfig({ max_processing_ms: TEST_MAX_PROCESSING_MS });
  });
  afterAll(async () => {
    await h?.close();
  });

  async function newApplications(n: number): Promise<number[]> {
    const records = await h.control.addRecords(
      'applications',
      Array.from({ length: n }, () => ({ status: 'submitted' })),
    );
    return records.map((r) => Number(r.id));
  }

  /** Applied writes per path in the sandbox's ledger. */
  async function appliedByPath(): Promise<Map<string, number>> {
    const counts = new Map<string, number>();
    for (const w of (await h.control.ledger()).writes) {
      if (w.applied) counts.set(w.path, (counts.get(w.path) ?? 0) + 1);
    }
    return counts;
  }

  describe('when the rate limit throttles most writes (a 429 storm)', () => {
    it('waits out every Retry-After and applies each decision exactly once', async () => {
      await h.control.setConfig({ rate_limit_per_minute: 6, rate_limit_window_seconds: 2 });
      running.push(await h.startConsumer(applicationDecisions));
      const apps = await newApplications(8);
      const ids = [];
      for (const app of apps)
        ids.push(await h.decision({ decision_id: uid('storm'), application_id: app, decision: 'approve' }));
      const outcomes = (await Promise.all(ids.map((id) => h.outcomesOf(id)))).map((o) => o[0]!);
      expect(outcomes.map((o) => o.status)).toEqual(apps.map(() => 'applied'));
      const throttled = (await h.control.ledger()).writes.filter((w) => w.status === 429);
      expect(throttled.length).toBeGreaterThan(0);
      const applied = await appliedByPath();
      expect(apps.map((app) => applied.get(APPROVE(app)) ?? 0)).toEqual(apps.map(() => 1));
    });
  });

  describe('when the token expires mid-run', () => {
    it('renews it and applies each decision exactly once', async () => {
      await h.control.setConfig({ token_ttl_seconds: 1 });
      running.push(await h.startConsumer(applicationDecisions));
      const apps = await newApplications(4);
      for (const app of apps) {
        const id = await h.decision({ decision_id: uid('ttl'), application_id: app, decision: 'approve' });
        expect((await h.outcomesOf(id))[0]?.status).toBe('applied');
        await new Promise((r) => setTimeout(r, 1500));
      }
      const applied = await appliedByPath();
      expect(apps.map((app) => applied.get(APPROVE(app)) ?? 0)).toEqual(apps.map(() => 1));
    });
  });

  describe('when the consumer process is killed while a write is in flight', () => {
    it('reads the in_flight command back after the restart and never writes it twice', async () => {
      const groupId = `rentbridge.application-decisions.${randomBytes(4).toString('hex')}`;
      child = spawn(process.execPath, ['--import', 'tsx', 'test/consumers/support/consumer-process.ts'], {
        env: {
          ...process.env,
          DATABASE_URL: h.database.url,
          KAFKA_BROKERS: h.kafka.brokers.join(','),
          KAFKA_TOPIC_PREFIX: h.kafka.prefix,
          PARTNER_API_URL: h.sandbox.url,
          GROUP_ID: groupId,
        },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      await new Promise<void>((resolve, reject) => {
        child!.stdout!.on('data', (chunk: Buffer) => chunk.toString().includes('ready') && resolve());
        child!.once('exit', (code) => reject(new Error(`consumer process exited with ${code}`)));
      });
      const [app] = await newApplications(1);
      await h.control.addFault({ method: 'POST', path: APPROVE(app!), kind: 'delay', delay_ms: 2500 });
      const id = await h.decision({ decision_id: uid('kill'), application_id: app!, decision: 'approve' });

      // Kill it once in_flight is committed and the write has reached the partner (the sandbox
      // has used up the delay fault: the write is being held there).
      await expect
        .poll(
          async () => {
            const { rows } = await h.database.sql.query<{ state: string }>(
              'SELECT state FROM commands WHERE command_id = $1',
              [id],
            );
            return rows[0]?.state;
          },
          { timeout: 20_000, interval: 50 },
        )
        .toBe('in_flight');
      await expect
        .poll(async () => (await h.control.faults()).some((f) => f.path === APPROVE(app!)), {
          timeout: 5000,
          interval: 20,
        })
        .toBe(false);
      child.kill('SIGKILL');
      await new Promise((r) => child!.once('exit', r));
      child = undefined;
      const { rows } = await h.database.sql.query<{ state: string }>(
        'SELECT state FROM commands WHERE command_id = $1',
        [id],
      );
      expect(rows[0]?.state).toBe('in_flight');

      running.push(await h.startConsumer(applicationDecisions, { groupId, sessionTimeoutMs: 6000 }));
      const [outcome] = await h.outcomesOf(id);
      expect(outcome).toMatchObject({ status: 'applied', attempts: 1, partner_request_ids: [`${id}.a1`] });
      expect(await h.writesTo(APPROVE(app!))).toHaveLength(1);
      const attempts = await h.database.sql.query<{ kind: string; result: string }>(
        // The guard's steps; the outcome's position note is written after, without waiting.
        "SELECT kind, result FROM command_attempts WHERE command_id = $1 AND kind <> 'outcome' ORDER BY id",
        [id],
      );
      // Reads made before the write landed said "unchanged": none of them led to a second write.
      expect(attempts.rows[0]).toEqual({ kind: 'write', result: 'interrupted' });
      expect(attempts.rows.at(-1)).toEqual({ kind: 'read_back', result: 'applied' });
      expect(attempts.rows.filter((r) => r.kind === 'write')).toHaveLength(1);
    });
  });
});
