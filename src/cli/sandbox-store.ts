import type { Db } from '../db/prisma.js';
import type { SandboxPersistence, SandboxSnapshot } from '../dev/sandbox/index.js';

/** The one row of `sandbox_state` the demo's sandbox is kept in. */
export const DEMO_SANDBOX = 'demo';

/**
 * The embedded sandbox's state in the PostgreSQL `rentbridge start` uses (docs/decisions/047): it
 * lives and goes with rentbridge's own data, so `--fresh`, another `DATABASE_URL` or a dropped
 * schema start both anew together, and a fresh database seeds once.
 */
export function sandboxStore(db: Db, name = DEMO_SANDBOX): SandboxPersistence {
  return {
    async load() {
      const row = await db.sandboxState.findUnique({ where: { name }, select: { state: true } });
      const state = row?.state as SandboxSnapshot | undefined;
      // A row of another shape (a later version's) is not guessed at: the sandbox seeds anew.
      return state?.version === 1 ? state : null;
    },
    async save(snapshot) {
      // One text parameter cast in SQL: Prisma's Json handling of a 1 MB document took seconds.
      await db.$executeRaw`
        INSERT INTO sandbox_state (name, state, saved_at)
        VALUES (${name}, ${JSON.stringify(snapshot)}::jsonb, now())
        ON CONFLICT (name) DO UPDATE SET state = EXCLUDED.state, saved_at = EXCLUDED.saved_at`;
    },
  };
}
