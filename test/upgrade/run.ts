import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Kafka, logLevel } from 'kafkajs';
import pg from 'pg';
import { createSandboxControl } from '../../src/dev/sandbox/control-client.js';
import { OUTCOME_TOPICS } from '../../src/kafka/topics.js';
import { readTopics } from '../chaos/topic-reader.js';
import { freePort } from '../support/free-port.js';
import { checkOutPrevious, previousRelease } from './previous-build.js';
import { rentbridgeOnce, runRentbridge, type Running } from './processes.js';
import { createTraffic, seedSandbox, writesByCommand } from './traffic.js';

/**
 * `npm run test:upgrade` (docs/releasing.md): the previous release and this checkout on one
 * database schema, topic prefix and Partner API sandbox, as a team upgrades while it runs.
 *
 *   1. the previous release's `start` serves signed PMS webhooks (payments, decisions), every
 *      payment write held 1.5 s in flight; three payments are refused (422) into dead letters;
 *   2. this checkout's migrations are applied beneath it: it must keep serving (/readyz 200) and
 *      keep writing;
 *   3. it is SIGKILLed while writes are in flight; this checkout's `start` takes over, /readyz 200
 *      within 10 s of its start, and finishes the work; its CLI lists the old dead letters and
 *      redrives them to applied;
 *   4. every command is applied exactly once (the sandbox's ledger), and an outcome published
 *      again has the id it was first published under.
 *
 * Prints its figures and exits 1 on any failure. Env: PREVIOUS_RELEASE (a ref; default the newest
 * older release tag, else 82d0ee2), UPGRADE_BUILD_DIR (keep the previous build there between
 * runs), UPGRADE_RATE (commands/s, default 8), UPGRADE_PHASE_SECONDS (default 8), DATABASE_URL
 * (the server; a schema of its own is made), KAFKA_BROKERS. Logs: test-artifacts/upgrade/.
 */

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const logDir = join(repoRoot, 'test-artifacts', 'upgrade');
const FINAL = new Set(['applied', 'already_applied', 'rejected', 'exhausted', 'unverified']);
const READY_WITHIN_MS = 10_000;
const began = Date.now();
const log = (m: string) => console.log(`[upgrade +${((Date.now() - began) / 1000).toFixed(1)}s] ${m}`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until<T>(
  what: string,
  fn: () => Promise<T | undefined | null | false>,
  ms: number,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn().catch(() => undefined);
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms / 1000} s`);
    await sleep(100);
  }
}

const status = (url: string) =>
  fetch(url, { signal: AbortSignal.timeout(2000) }).then(
    async (r) => (await r.text(), r.status),
    () => 0,
  );

async function main(): Promise<number> {
  rmSync(logDir, { recursive: true, force: true });
  const failures: string[] = [];
  const ref = previousRelease(repoRoot);
  const build = checkOutPrevious(repoRoot, ref, log);
  const suffix = randomBytes(4).toString('hex');
  const schema = `upgrade_${suffix}`;
  const prefix = `upgrade-${suffix}.`;
  const server = (process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres').split('?')[0]!;
  const brokers = process.env.KAFKA_BROKERS ?? '127.0.0.1:9092';
  const sandboxPort = await freePort();
  const httpPort = await freePort();
  const sandboxUrl = `http://127.0.0.1:${sandboxPort}`;
  const appUrl = `http://127.0.0.1:${httpPort}`;
  const pmsSecret = `whsec_${randomBytes(24).toString('base64')}`;
  const env: Record<string, string> = {
    DATABASE_URL: `${server}?schema=${schema}`,
    KAFKA_BROKERS: brokers,
    KAFKA_TOPIC_PREFIX: prefix,
    HTTP_PORT: String(httpPort),
    PARTNER_API_URL: sandboxUrl,
    PARTNER_ACCESS_KEY: 'sandbox-access-key',
    PARTNER_SECRET_KEY: 'sandbox-secret-key',
    PARTNER_TIMEOUT_MS: '4000',
    PARTNER_MAX_PROCESSING_MS: '6000',
    PARTNER_RATE_LIMIT_PER_MINUTE: '6000',
    PMS_WEBHOOK_SECRETS: JSON.stringify({ acme: [pmsSecret] }),
    OPS_TOKEN: `upgrade-${randomBytes(12).toString('hex')}`,
  };
  const pool = new pg.Pool({ connectionString: server, max: 2, options: `-c search_path=${schema}` });
  const running: Running[] = [];
  try {
    const sandboxProc = runRentbridge(
      'sandbox',
      repoRoot,
      ['sandbox', '--port', String(sandboxPort)],
      {},
      logDir,
    );
    running.push(sandboxProc);
    await until('the sandbox', async () => (await status(`${sandboxUrl}/__sandbox/config`)) === 200, 90_000);
    const sandbox = createSandboxControl(sandboxUrl);
    await sandbox.reset();
    await sandbox.setConfig({ max_processing_ms: 6000, rate_limit_per_minute: 6000 });
    const records = await seedSandbox(sandbox, 400);
    // Matched in order: the dead-letter enrollment's first three writes are refused; every other
    // payment write is held 1.5 s in flight (applied, then answered).
    const report = (id: number | string) => `/partner/v1/enrollments/${id}/report_rental_payments`;
    await sandbox.addFault({
      method: 'POST',
      path: report(records.deadLetterEnrollment),
      kind: 'error',
      status: 422,
      times: 3,
    });
    await sandbox.addFault({ method: 'POST', path: report('*'), kind: 'delay', delay_ms: 1500 });

    log(`previous release ${ref}: start (schema ${schema}, prefix ${prefix})`);
    const old = runRentbridge('previous', build.dir, ['start'], env, logDir);
    running.push(old);
    await until(
      'the previous release ready',
      async () => (await status(`${appUrl}/readyz`)) === 200,
      180_000,
    );

    const traffic = createTraffic({
      receiverUrl: () => appUrl,
      source: 'acme',
      secret: pmsSecret,
      ...records,
    });
    const rate = Number(process.env.UPGRADE_RATE ?? 8);
    const phaseMs = Number(process.env.UPGRADE_PHASE_SECONDS ?? 8) * 1000;
    traffic.start(rate);
    traffic.sendDeadLetters(3);
    await sleep(phaseMs);

    log('applying the new migrations beneath the running previous release');
    await rentbridgeOnce(repoRoot, ['migrate'], env, logDir);
    const migratedAt = Date.now();
    let notReady = 0;
    let watching = true;
    const watch = (async () => {
      while (watching) {
        if ((await status(`${appUrl}/readyz`)) !== 200) notReady += 1;
        await sleep(250);
      }
    })();
    await sleep(phaseMs);
    // Mid-write: a write is in flight (started, unanswered) when it is killed.
    await until(
      'a write in flight',
      async () =>
        Number(
          (
            await pool.query(
              `SELECT count(*) AS n FROM command_attempts WHERE kind = 'write' AND finished_at IS NULL`,
            )
          ).rows[0].n,
        ) > 0,
      30_000,
    );
    // Killed at once: the watch's last /readyz call may take a while, and the write in flight is
    // held only 1.5 s (CI once killed after it had ended: nothing in flight, nothing tested).
    watching = false;
    const notReadyBeforeKill = notReady;
    old.child.kill('SIGKILL');
    const killedAt = Date.now();
    await watch;
    notReady = notReadyBeforeKill; // a check still running at the kill saw the process die, not fail
    const states = async () =>
      new Map(
        (
          await pool.query<{ command_id: string; state: string }>('SELECT command_id, state FROM commands')
        ).rows.map((r) => [r.command_id, r.state]),
      );
    await old.exited;
    const atStop = await states();
    const inFlight = traffic.commands.filter((c) => !FINAL.has(atStop.get(c.id) ?? '')).length;
    const oldLedger = (await sandbox.ledger()).writes.filter((w) => w.applied);
    const oldWritesAfter = oldLedger.filter((w) => {
      const at = Date.parse(w.at);
      return at >= migratedAt && at <= killedAt;
    }).length;
    log(`SIGKILL: ${inFlight} commands in flight; ${oldWritesAfter} writes after the new migrations`);

    const startedAt = Date.now();
    const fresh = runRentbridge('new', repoRoot, ['start'], env, logDir);
    running.push(fresh);
    // What kept it not ready, for the failure's message: the last 503's body.
    let lastNotReady = '';
    await until(
      'the new version ready',
      async () => {
        const res = await fetch(`${appUrl}/readyz`, { signal: AbortSignal.timeout(5000) }).catch(
          (error: Error) => ((lastNotReady = error.message), null),
        );
        if (!res) return false;
        const body = await res.text();
        if (res.status !== 200) lastNotReady = `${((Date.now() - startedAt) / 1000).toFixed(1)} s: ${body}`;
        return res.status === 200;
      },
      120_000,
    );
    const readyMs = Date.now() - startedAt;
    if (readyMs > READY_WITHIN_MS) log(`not ready until then: ${lastNotReady.slice(0, 1500)}`);
    log(`new version ready ${(readyMs / 1000).toFixed(1)} s after its start`);
    await sleep(phaseMs);
    const unacknowledged = await traffic.stop();
    failures.push(...unacknowledged.slice(0, 5));
    if (unacknowledged.length > 5) failures.push(`... ${unacknowledged.length} never acknowledged`);
    const sent = traffic.commands.length;
    log(`${sent} commands sent; waiting for every one to be final`);
    await until(
      'every command final',
      async () => {
        const now = await states();
        return traffic.commands
          .filter((c) => c.ackedAt !== undefined)
          .every((c) => FINAL.has(now.get(c.id) ?? ''));
      },
      180_000,
    ).catch((error: Error) => failures.push(error.message));

    // The old version's dead letters, read and redriven by the new version's CLI.
    const letterCommands = traffic.commands.filter((c) => c.deadLetter).map((c) => c.id);
    const letters = await until(
      'the old dead letters listed by the new version',
      async () => {
        const out = JSON.parse(
          await rentbridgeOnce(repoRoot, ['dlq', 'list', '--json', '--limit', '1000'], env, logDir),
        ) as {
          items: Array<{ id: number | string; commandId: string | null }>;
        };
        const found = out.items.filter((l) => l.commandId && letterCommands.includes(l.commandId));
        return found.length === letterCommands.length ? found : undefined;
      },
      60_000,
    ).catch((error: Error) => (failures.push(error.message), []));
    if (letters.length > 0) {
      await rentbridgeOnce(
        repoRoot,
        ['dlq', 'redrive', ...letters.map((l) => String(l.id)), '--yes', '--note', 'upgrade test'],
        env,
        logDir,
      ).catch((error: Error) => failures.push(`redrive of the old dead letters: ${error.message}`));
      await until(
        'the redriven letters applied',
        async () => {
          const now = await states();
          return letterCommands.every((id) => now.get(id) === 'applied');
        },
        90_000,
      ).catch((error: Error) => failures.push(error.message));
    }

    // Exactly once, by the sandbox's ledger.
    const byCommand = writesByCommand((await sandbox.ledger()).writes, traffic.commands);
    const final = await states();
    const acked = traffic.commands.filter((c) => c.ackedAt !== undefined);
    const lost = acked.filter((c) => (byCommand.get(c.id)?.length ?? 0) === 0);
    const doubled = acked.filter((c) => (byCommand.get(c.id)?.length ?? 0) > 1);
    const notApplied = acked.filter((c) => !['applied', 'already_applied'].includes(final.get(c.id) ?? ''));

    // An outcome published again keeps the id it was first published under, across the versions.
    const topics = OUTCOME_TOPICS.map((t) => `${prefix}${t}`);
    const outcomes = [...(await readTopics(brokers, topics)).values()].flat();
    const idsOf = new Map<string, Set<string>>();
    let republished = 0;
    let oldForm = 0;
    for (const m of outcomes) {
      const event = JSON.parse(m.value) as { id: string; data: { command_id: string; status: string } };
      const key = `${event.data.command_id} ${event.data.status}`;
      const ids = idsOf.get(key) ?? new Set<string>();
      if (idsOf.has(key)) republished += 1;
      ids.add(event.id);
      idsOf.set(key, ids);
      if (event.id === `outcome.${event.data.command_id}`) oldForm += 1;
    }
    const renamed = [...idsOf].filter(([, ids]) => ids.size > 1);

    console.log('\nupgrade figures');
    console.log(`  from ${ref} to this checkout; ${sent} commands (payments and decisions)`);
    console.log(`  commands in flight at the SIGKILL: ${inFlight}`);
    console.log(`  lost: ${lost.length}   doubled: ${doubled.length}   not applied: ${notApplied.length}`);
    console.log(
      `  previous release's writes after the new migrations: ${oldWritesAfter} (/readyz not 200: ${notReady} of its checks)`,
    );
    console.log(
      `  old dead letters listed and redriven by the new version: ${letters.length} of ${letterCommands.length}`,
    );
    console.log(
      `  readiness after the SIGKILL: ${(readyMs / 1000).toFixed(1)} s (bound ${READY_WITHIN_MS / 1000} s)`,
    );
    console.log(
      `  outcomes republished: ${republished} (under the old id form: ${oldForm}); ids changed: ${renamed.length}`,
    );

    if (lost.length > 0)
      failures.push(
        `lost: ${lost
          .slice(0, 5)
          .map((c) => c.id)
          .join(', ')}`,
      );
    if (doubled.length > 0)
      failures.push(
        `applied twice: ${doubled
          .slice(0, 5)
          .map((c) => c.id)
          .join(', ')}`,
      );
    if (notApplied.length > 0)
      failures.push(
        `not applied: ${notApplied
          .slice(0, 5)
          .map((c) => `${c.id} (${final.get(c.id) ?? 'no row'})`)
          .join(', ')}`,
      );
    if (oldWritesAfter === 0) failures.push('the previous release wrote nothing after the new migrations');
    if (notReady > 0)
      failures.push(`the previous release's /readyz failed ${notReady} times under the new schema`);
    if (inFlight === 0) failures.push('no command was in flight at the SIGKILL: the stop tested nothing');
    if (readyMs > READY_WITHIN_MS)
      failures.push(`readiness ${readyMs} ms after the crash (bound ${READY_WITHIN_MS} ms)`);
    for (const [key, ids] of renamed)
      failures.push(`outcome ${key} published under ${[...ids].join(' and ')}`);
  } catch (error) {
    failures.push((error as Error).stack ?? String(error));
  } finally {
    for (const p of running.reverse()) {
      p.child.kill('SIGTERM');
      await Promise.race([p.exited, sleep(15_000)]);
      p.child.kill('SIGKILL');
    }
    await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
    await pool.end();
    await dropTopics(brokers, prefix).catch(() => undefined);
    build.remove();
  }
  if (failures.length > 0) {
    console.error(`\nupgrade test FAILED (logs: ${logDir}):\n  ${failures.join('\n  ')}`);
    return 1;
  }
  console.log('\nupgrade test passed');
  return 0;
}

async function dropTopics(brokers: string, prefix: string): Promise<void> {
  const admin = new Kafka({
    clientId: 'upgrade-cleanup',
    brokers: [brokers],
    logLevel: logLevel.NOTHING,
  }).admin();
  await admin.connect();
  const topics = (await admin.listTopics()).filter((t) => t.startsWith(prefix));
  if (topics.length > 0) await admin.deleteTopics({ topics });
  await admin.disconnect();
}

process.exit(await main());
