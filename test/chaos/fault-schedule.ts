import type { Random } from './chaos-options.js';

/**
 * When each fault happens, as offsets from the start of the load. Faults of the servers are
 * spread out so that each one's recovery time is its own; process kills fall anywhere,
 * including in the middle of another fault.
 */
export type StormKind =
  | 'apply_then_error'
  | 'apply_then_timeout'
  | '503'
  | '429'
  | 'lock_failed'
  /** Writes delayed past the client's time-out: within the processing bound they land late, beyond it they are dropped (503). */
  | 'late_writes';

export type PlannedFault =
  | {
      kind: 'kill';
      atMs: number;
      role: string;
      downMs: number;
      /** Set for consumers: the kill waits for the storms to be over, then this long. */
      afterStormsMs?: number;
    }
  | { kind: 'kafka_restart'; atMs: number; downMs: number }
  | { kind: 'pg_restart'; atMs: number; downMs: number }
  | { kind: 'storm'; atMs: number; storm: StormKind; durationMs: number }
  | { kind: 'token_ttl'; atMs: number; durationMs: number }
  | { kind: 'key_revoke'; atMs: number };

export function planFaults(options: {
  seconds: number;
  random: Random;
  roles: string[];
  stormSeconds?: number | null;
}): PlannedFault[] {
  const { random } = options;
  const total = options.seconds * 1000;
  const at = (fraction: number) => Math.round(total * (fraction + random.between(-0.01, 0.01)));
  const stormMs = options.stormSeconds
    ? Math.round(options.stormSeconds * 1000)
    : Math.round(Math.min(10_000, Math.max(4000, total * 0.06)));
  // First half: the sandbox's storms and token expiry, while the consumers are busy (a killed
  // consumer stalls its topic until Kafka notices, which would leave a storm nothing to hit).
  // Second half: the servers' restarts and the consumers' deaths.
  const plan: PlannedFault[] = [
    { kind: 'storm', atMs: at(0.05), storm: 'apply_then_error', durationMs: stormMs },
    { kind: 'storm', atMs: at(0.09), storm: 'late_writes', durationMs: Math.max(stormMs * 3, 24_000) },
    { kind: 'storm', atMs: at(0.13), storm: 'apply_then_timeout', durationMs: stormMs },
    { kind: 'storm', atMs: at(0.21), storm: '503', durationMs: stormMs },
    { kind: 'storm', atMs: at(0.29), storm: '429', durationMs: stormMs },
    { kind: 'storm', atMs: at(0.37), storm: 'lock_failed', durationMs: stormMs },
    { kind: 'token_ttl', atMs: at(0.44), durationMs: Math.round(Math.max(6000, total * 0.05)) },
    {
      kind: 'kafka_restart',
      atMs: at(0.5),
      downMs: Math.round(Math.min(15_000, Math.max(4000, total * 0.06))),
    },
    { kind: 'pg_restart', atMs: at(0.68), downMs: Math.round(Math.min(8000, Math.max(2000, total * 0.04))) },
    { kind: 'key_revoke', atMs: at(0.8) },
  ];
  if (options.seconds >= 300) {
    plan.push({ kind: 'storm', atMs: at(0.6), storm: 'apply_then_timeout', durationMs: stormMs });
    plan.push({ kind: 'kafka_restart', atMs: at(0.86), downMs: 8000 });
  }
  const kills = Math.max(options.roles.length, Math.round(options.seconds / 15));
  // The callbacks role is a Kafka consumer too (its intake), and the run's check of callback
  // isolation needs the first half without it dying: the second half, like the consumers.
  const early = options.roles.filter((r) => !r.startsWith('consumer') && r !== 'callbacks');
  for (let i = 0; i < kills; i++) {
    // Every role is killed at least once; the receiver and the relay at any time, the consumers
    // in the second half only.
    const role = i < options.roles.length ? options.roles[i]! : random.pick(options.roles);
    const window = early.includes(role) ? [0.04, 0.9] : [0.5, 0.9];
    const atMs = Math.round(random.between(window[0]!, window[1]!) * total);
    plan.push({
      kind: 'kill',
      atMs,
      role,
      downMs: random.int(200, 3000),
      ...(early.includes(role) ? {} : { afterStormsMs: Math.max(0, atMs - Math.round(total * 0.5)) }),
    });
  }
  return plan.sort((a, b) => a.atMs - b.atMs);
}
