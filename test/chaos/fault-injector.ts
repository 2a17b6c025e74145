import type { PlannedFault, StormKind } from './fault-schedule.js';
import type { KafkaBroker } from './kafka-broker.js';
import type { PostgresCluster } from './postgres-cluster.js';
import type { Supervisor } from './process-supervisor.js';
import type { FaultInput, SandboxControl } from '../../src/dev/sandbox/control-client.js';

/**
 * Carries out the planned faults and measures how long the system takes to do useful work
 * again after each one (the next acknowledged webhook, the next publish, the next finished
 * command).
 */
export interface FaultRecord {
  kind: string;
  detail: string;
  startAt: number;
  endAt: number | null;
  /** End of the window in which its effects are counted (set after the run). */
  windowEndAt?: number;
  recoveries: Array<{ what: string; ms: number | null }>;
  error?: string;
}

export interface Probes {
  /** Ms from `after` to the next acknowledged webhook, or null after `timeoutMs`. */
  nextAck(after: number, timeoutMs: number): Promise<number | null>;
  nextPublish(after: number, timeoutMs: number): Promise<number | null>;
  nextCommandFinished(after: number, timeoutMs: number): Promise<number | null>;
}

export interface FaultTargets {
  supervisor: Supervisor;
  kafka: KafkaBroker;
  pg: PostgresCluster;
  sandbox: SandboxControl;
  probes: Probes;
  log(message: string): void;
}

/** The write paths of the Partner API (DESIGN.md assumptions) the storms hit. */
export const WRITE_PATHS = [
  '/partner/v1/enrollments/*/report_rental_payments',
  '/partner/v1/applications/*/approve',
  '/partner/v1/applications/*/decline',
  '/v1/partners/customers',
  '/partner/v1/enrollments',
];

/**
 * The chaos run's timings of a late write (run.ts sets them): the client gives up at
 * PARTNER_TIMEOUT_MS, the sandbox drops a write still unfinished at max_processing_ms, and the
 * guard is told the same bound (PARTNER_MAX_PROCESSING_MS).
 */
export const CHAOS_CLIENT_TIMEOUT_MS = 3000;
export const CHAOS_MAX_PROCESSING_MS = 6000;

/**
 * Delays of the late-write storm, used one per write in turn: most land 0.5 to 2.8 s after the
 * client's time-out (within the bound), about one in four is still unfinished at the bound (the
 * sandbox answers 503 request_timeout and drops it).
 */
export const LATE_DELAYS_MS = [3500, 4200, 7000, 5800, 3300, 4800, 8000, 5200];

/** What a late-write storm did, counted from the faults it used up. */
export interface LateWriteCount {
  injected: number;
  withinBound: number;
  pastBound: number;
}

function stormFault(storm: Exclude<StormKind, 'late_writes'>): Omit<FaultInput, 'method' | 'path'> {
  switch (storm) {
    case 'apply_then_error':
      return { kind: 'apply_then_error', status: 500, code: 'api_error' };
    case 'apply_then_timeout':
      return { kind: 'apply_then_timeout' };
    case '503':
      return { kind: 'error', status: 503, code: 'service_unavailable' };
    case '429':
      return { kind: 'error', status: 429, code: 'rate_limited' };
    case 'lock_failed':
      return { kind: 'error', status: 409, code: 'lock_failed' };
  }
}

const RECOVERY_TIMEOUT_MS = 90_000;
/** Least time between the end of one server fault or storm and the start of the next. */
const SETTLE_MS = 8000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function createFaultInjector(targets: FaultTargets) {
  const records: FaultRecord[] = [];
  const late: LateWriteCount = { injected: 0, withinBound: 0, pastBound: 0 };
  const pending = new Set<Promise<void>>();
  /** Faults of the servers and storms run one at a time; kills run whenever they fall. */
  let serial: Promise<void> = Promise.resolve();
  let lastSerialEnd = 0;

  /** Recovery measurements still running. */
  const track = (p: Promise<void>) => {
    pending.add(p);
    void p.finally(() => pending.delete(p));
  };

  /** Recovery is measured in the background: the next fault does not wait for it. */
  const measure = (record: FaultRecord, what: string, probe: Promise<number | null>) => {
    const entry: { what: string; ms: number | null } = { what, ms: null };
    record.recoveries.push(entry);
    track(
      probe.then(
        (ms) => {
          entry.ms = ms;
        },
        () => undefined,
      ),
    );
  };

  const execute = async (fault: PlannedFault): Promise<void> => {
    const { supervisor, kafka, pg, sandbox, probes, log } = targets;
    const record: FaultRecord = {
      kind:
        fault.kind === 'storm'
          ? `storm:${fault.storm}`
          : fault.kind === 'kill'
            ? `kill:${fault.role}`
            : fault.kind,
      detail: '',
      startAt: Date.now(),
      endAt: null,
      recoveries: [],
    };
    records.push(record);
    try {
      switch (fault.kind) {
        case 'kill': {
          const pid = supervisor.kill(fault.role);
          record.detail = pid ? `SIGKILL pid ${pid}, down ${fault.downMs} ms` : 'was not running';
          log(`fault: ${record.kind} (${record.detail})`);
          await sleep(fault.downMs);
          supervisor.restart(fault.role);
          const restartedAt = Date.now();
          record.endAt = restartedAt;
          const what = fault.role === 'receiver' ? 'ack' : fault.role === 'relay' ? 'publish' : 'command';
          const probe =
            what === 'ack'
              ? probes.nextAck
              : what === 'publish'
                ? probes.nextPublish
                : probes.nextCommandFinished;
          measure(record, `next ${what}`, probe(restartedAt, RECOVERY_TIMEOUT_MS));
          break;
        }
        case 'kafka_restart': {
          log(`fault: Kafka broker stop, down ${fault.downMs} ms after it stopped`);
          await kafka.stop();
          const stoppedAt = Date.now();
          await sleep(fault.downMs);
          await kafka.start();
          const upAt = Date.now();
          record.endAt = upAt;
          record.detail = `graceful stop took ${((stoppedAt - record.startAt) / 1000).toFixed(1)} s, down ${((upAt - stoppedAt) / 1000).toFixed(1)} s until it answered again`;
          log(`fault: Kafka broker back (${record.detail})`);
          measure(record, 'next publish', probes.nextPublish(upAt, RECOVERY_TIMEOUT_MS));
          measure(record, 'next ack', probes.nextAck(upAt, RECOVERY_TIMEOUT_MS));
          measure(record, 'next command', probes.nextCommandFinished(upAt, RECOVERY_TIMEOUT_MS));
          break;
        }
        case 'pg_restart': {
          log(`fault: PostgreSQL crash (immediate stop) for ${fault.downMs} ms`);
          const { upAt } = await pg.crashRestart(fault.downMs);
          record.endAt = upAt;
          record.detail = `down ${upAt - record.startAt} ms (pg_ctl stop -m immediate, then start)`;
          log(`fault: PostgreSQL back (${record.detail})`);
          measure(record, 'next ack', probes.nextAck(upAt, RECOVERY_TIMEOUT_MS));
          measure(record, 'next publish', probes.nextPublish(upAt, RECOVERY_TIMEOUT_MS));
          measure(record, 'next command', probes.nextCommandFinished(upAt, RECOVERY_TIMEOUT_MS));
          break;
        }
        case 'storm': {
          if (fault.storm === 'late_writes') {
            // One delay fault per write (times 1), so each use can be counted afterwards.
            const added = new Map<string, number>();
            for (const path of WRITE_PATHS) {
              for (let i = 0; i < 60; i++) {
                const delay = LATE_DELAYS_MS[i % LATE_DELAYS_MS.length]!;
                const f = await sandbox.addFault({
                  method: 'POST',
                  path,
                  kind: 'delay',
                  delay_ms: delay,
                  times: 1,
                });
                added.set(f.id, delay);
              }
            }
            record.detail = `every write delayed past the client's ${CHAOS_CLIENT_TIMEOUT_MS} ms time-out (${LATE_DELAYS_MS.join(', ')} ms in turn; bound ${CHAOS_MAX_PROCESSING_MS} ms) for ${fault.durationMs} ms`;
            log(`fault: storm late_writes for ${fault.durationMs} ms`);
            await sleep(fault.durationMs);
            const left = new Set((await sandbox.faults()).map((f) => f.id));
            await sandbox.clearFaults();
            for (const [id, delay] of added) {
              if (left.has(id)) continue;
              late.injected++;
              if (delay >= CHAOS_MAX_PROCESSING_MS) late.pastBound++;
              else late.withinBound++;
            }
            record.detail += `: ${late.injected} late writes (${late.withinBound} within the bound, ${late.pastBound} past it)`;
            const clearedAt = Date.now();
            record.endAt = clearedAt;
            measure(record, 'next command', probes.nextCommandFinished(clearedAt, RECOVERY_TIMEOUT_MS));
            break;
          }
          const fields = stormFault(fault.storm);
          for (const path of WRITE_PATHS) {
            await sandbox.addFault({ method: 'POST', path, ...fields, times: null });
          }
          record.detail = `every write fails with ${fault.storm} for ${fault.durationMs} ms`;
          log(`fault: storm ${fault.storm} for ${fault.durationMs} ms`);
          await sleep(fault.durationMs);
          await sandbox.clearFaults();
          const clearedAt = Date.now();
          record.endAt = clearedAt;
          measure(record, 'next command', probes.nextCommandFinished(clearedAt, RECOVERY_TIMEOUT_MS));
          break;
        }
        case 'token_ttl': {
          const before = (await sandbox.setConfig({})).token_ttl_seconds;
          await sandbox.setConfig({ token_ttl_seconds: 2 });
          record.detail = `tokens live 2 s for ${fault.durationMs} ms`;
          log(`fault: ${record.detail}`);
          await sleep(fault.durationMs);
          await sandbox.setConfig({ token_ttl_seconds: before });
          record.endAt = Date.now();
          break;
        }
        case 'key_revoke': {
          await sandbox.revokeKey('sandbox-access-key');
          await sandbox.createKey({ access_key: 'sandbox-access-key', secret_key: 'sandbox-secret-key' });
          record.endAt = Date.now();
          record.detail = 'key revoked (its tokens with it) and created again';
          log(`fault: ${record.detail}`);
          measure(record, 'next command', probes.nextCommandFinished(record.endAt, RECOVERY_TIMEOUT_MS));
          break;
        }
      }
    } catch (error) {
      record.error = (error as Error).message;
      log(`fault ${record.kind} failed: ${record.error}`);
    }
  };

  return {
    records,
    late,
    /**
     * Schedules every fault relative to `t0`. `injected` resolves when every fault has been
     * carried out (the load should run at least until then); `settled` when every recovery
     * measurement has finished too.
     */
    run(plan: PlannedFault[], t0: number): { injected: Promise<void>; settled: Promise<void> } {
      const actions: Promise<void>[] = [];
      // The storms (and token expiry) come first; kills of consumers wait until they are over,
      // however long the chain of faults took, so that no storm meets a stalled consumer.
      const phase1 = plan.filter((f) => f.kind === 'storm' || f.kind === 'token_ttl').length;
      let phase1Left = phase1;
      let phase1Over!: () => void;
      const stormsOver = new Promise<void>((resolve) => (phase1Over = resolve));
      if (phase1 === 0) phase1Over();
      const injected = (async () => {
        for (const fault of plan) {
          if (fault.kind === 'kill' && fault.afterStormsMs !== undefined) {
            const delay = fault.afterStormsMs;
            actions.push(stormsOver.then(() => sleep(delay)).then(() => execute(fault)));
            continue;
          }
          const wait = t0 + fault.atMs - Date.now();
          if (wait > 0) await sleep(wait);
          if (fault.kind === 'kill') {
            actions.push(execute(fault));
          } else {
            // A server fault or storm waits for the previous one to be over, so that each one's
            // recovery is its own; kills fall anywhere, including in the middle of one.
            serial = serial.then(async () => {
              // A pause after the previous one, so that its recovery is measured on its own.
              const gap = lastSerialEnd + SETTLE_MS - Date.now();
              if (gap > 0) await sleep(gap);
              await execute(fault);
              lastSerialEnd = Date.now();
              if ((fault.kind === 'storm' || fault.kind === 'token_ttl') && --phase1Left === 0) phase1Over();
            });
            actions.push(serial);
          }
        }
        await Promise.all(actions);
      })();
      const settled = injected.then(async () => {
        while (pending.size > 0) await Promise.all([...pending]);
      });
      return { injected, settled };
    },
  };
}
