/**
 * The chaos run's size and ports, from the environment (all optional). The ports are away from
 * the shared servers (PostgreSQL 5432, Kafka 9092) on purpose: this run owns its own and
 * restarts them.
 */
export interface ChaosOptions {
  /** Length of the load-and-faults phase. `CHAOS_SECONDS`, default 120. */
  seconds: number;
  /** Webhooks and record changes per second. `CHAOS_RATE`, default 5. */
  rate: number;
  /** Longest wait for the system to settle after the load stops. `CHAOS_DRAIN_SECONDS`, default 150. */
  drainSeconds: number;
  /**
   * Longest wait, after the drain, for every outcome callback to be delivered (a callbacks role
   * killed late rejoins its group only when Kafka gives up on the dead member, about 30 s).
   * `CHAOS_CALLBACK_SETTLE_SECONDS`, default 120.
   */
  callbackSettleSeconds: number;
  /** Seed of every random choice (faults, timings, load mix). `CHAOS_SEED`, default: random. */
  seed: number;
  pgPort: number;
  kafkaPort: number;
  kafkaControllerPort: number;
  sandboxPort: number;
  /** First of the HTTP ports the rentbridge roles listen on (receiver, relay, consumers). */
  httpPortBase: number;
  /** Length of each sandbox storm; default 6 % of the run, 4 to 10 s. `CHAOS_STORM_SECONDS`. */
  stormSeconds: number | null;
  /** Write the figures into docs/chaos.md. `CHAOS_WRITE_DOCS=0` to skip. Default on. */
  writeDocs: boolean;
  /**
   * Run against a sandbox that breaks the payment read-back's assumptions: enrollments listed
   * without `rental_payments`, reports that leave `updated_at` alone. `CHAOS_HIDE_PAYMENTS=1`.
   */
  hidePayments: boolean;
  /**
   * Also measure what compaction leaves of the run's changelogs (test/chaos/compaction.ts; about
   * a minute more). `CHAOS_COMPACTION=1`.
   */
  compaction: boolean;
}

function num(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a positive number, got "${raw}"`);
  return n;
}

export function chaosOptions(): ChaosOptions {
  return {
    seconds: num('CHAOS_SECONDS', 120),
    rate: num('CHAOS_RATE', 5),
    drainSeconds: num('CHAOS_DRAIN_SECONDS', 150),
    callbackSettleSeconds: num('CHAOS_CALLBACK_SETTLE_SECONDS', 120),
    seed: num('CHAOS_SEED', Math.floor(Math.random() * 2 ** 31) + 1),
    pgPort: num('CHAOS_PG_PORT', 15432),
    kafkaPort: num('CHAOS_KAFKA_PORT', 29092),
    kafkaControllerPort: num('CHAOS_KAFKA_CONTROLLER_PORT', 29093),
    sandboxPort: num('CHAOS_SANDBOX_PORT', 14010),
    httpPortBase: num('CHAOS_HTTP_PORT_BASE', 18080),
    stormSeconds: process.env.CHAOS_STORM_SECONDS ? num('CHAOS_STORM_SECONDS', 0) : null,
    writeDocs: process.env.CHAOS_WRITE_DOCS !== '0',
    hidePayments: process.env.CHAOS_HIDE_PAYMENTS === '1',
    compaction: process.env.CHAOS_COMPACTION === '1',
  };
}

/** A small seeded PRNG (mulberry32): the same seed replays the same faults and load mix. */
export function createRandom(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    between: (min: number, max: number) => min + next() * (max - min),
    int: (min: number, max: number) => Math.floor(min + next() * (max - min + 1)),
    pick: <T>(items: readonly T[]): T => {
      const item = items[Math.floor(next() * items.length)];
      if (item === undefined) throw new Error('pick from an empty list');
      return item;
    },
    chance: (p: number) => next() < p,
  };
}
export type Random = ReturnType<typeof createRandom>;
