import type { Random } from './chaos-options.js';

/**
 * When each fault happens, as offsets from the start of the load. Faults of the servers are
 * spread out so that each one's recovery time is its own; process kills fall anywhere,
 * including in the middle of another fault.
 */
export type StormKind = 'apply_then_error' | 'apply_then_timeout' | '503' | '429' | 'lock_failed';

export type PlannedFault =
  | { kind: 'kill'; atMs: number; role: string; downMs: number }
  | { kind: 'kafka_restart'; atMs: number; downMs: number }
  | { kind: 'pg_restart'; atMs: number; downMs: number }
  | { kind: 'storm'; atMs: number; storm: StormKind; durationMs: number }
  | { kind: 'token_ttl'; atMs: number; durationMs: number }
  | { kind: 'key_revoke'; atMs: number };

export function planFaults(options: { seconds: number; random: Random; roles: string[] }): PlannedFault[] {
  const { random } = options;
  const total = options.seconds * 1000;
  const at = (fraction: number) => Math.round(total * (fraction + random.between(-0.02, 0.02)));
  const stormMs = Math.round(Math.min(10_000, Math.max(3000, total * 0.06)));
  const plan: PlannedFault[] = [
    { kind: 'storm', atMs: at(0.1), storm: 'apply_then_error', durationMs: stormMs },
    {
      kind: 'kafka_restart',
      atMs: at(0.22),
      downMs: Math.round(Math.min(15_000, Math.max(4000, total * 0.08))),
    },
    { kind: 'storm', atMs: at(0.34), storm: 'apply_then_timeout', durationMs: stormMs },
    { kind: 'token_ttl', atMs: at(0.42), durationMs: Math.round(Math.max(6000, total * 0.08)) },
    { kind: 'pg_restart', atMs: at(0.52), downMs: Math.round(Math.min(8000, Math.max(2000, total * 0.04))) },
    { kind: 'storm', atMs: at(0.62), storm: '503', durationMs: stormMs },
    { kind: 'storm', atMs: at(0.7), storm: '429', durationMs: stormMs },
    { kind: 'storm', atMs: at(0.78), storm: 'lock_failed', durationMs: stormMs },
    { kind: 'key_revoke', atMs: at(0.86) },
  ];
  if (options.seconds >= 240) {
    plan.push({ kind: 'kafka_restart', atMs: at(0.66), downMs: 8000 });
    plan.push({ kind: 'pg_restart', atMs: at(0.9), downMs: 3000 });
  }
  const kills = Math.max(4, Math.round(options.seconds / 15));
  for (let i = 0; i < kills; i++) {
    // Every role is killed at least once when there are enough kills; the rest at random.
    const role = i < options.roles.length ? options.roles[i]! : random.pick(options.roles);
    plan.push({
      kind: 'kill',
      atMs: Math.round(random.between(0.05, 0.9) * total),
      role,
      downMs: random.int(200, 3000),
    });
  }
  return plan.sort((a, b) => a.atMs - b.atMs);
}
