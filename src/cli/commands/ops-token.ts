import { createCompositionRoot } from '../../app/composition-root.js';
import { writeAudit } from '../../dead-letters/audit-repository.js';
import { AppError } from '../../errors.js';
import type { OpsRole } from '../../ops/ops-roles.js';
import { createOpsToken, listOpsTokens, revokeOpsToken } from '../../ops/ops-token-repository.js';
import { cliActor } from '../cli-actor.js';
import { terminalSafe } from '../../terminal-text.js';
import { loadConfigOrExit, UsageError } from '../process.js';

/** `rentbridge ops-token …`: personal tokens of the ops API (src/ops/ops-token-repository.ts). */

async function withDb<T>(work: (root: ReturnType<typeof createCompositionRoot>) => Promise<T>): Promise<T> {
  const root = createCompositionRoot(loadConfigOrExit());
  try {
    return await work(root);
  } catch (error) {
    // A bad name or a name in use: one clear line, exit 2.
    if (error instanceof AppError && error.status < 500) throw new UsageError(error.message);
    throw error;
  } finally {
    await root.close();
  }
}

const day = (d: Date | null) => (d ? d.toISOString().slice(0, 16).replace('T', ' ') : '-');

export async function create(opts: {
  name: string;
  role: OpsRole;
  /** Days until it expires, or `never`; unset: the default (90 days). */
  expires?: number | 'never';
}): Promise<void> {
  await withDb(async (root) => {
    const actor = cliActor();
    const { token, info } = await createOpsToken(root.db, {
      name: opts.name,
      role: opts.role,
      ...(opts.expires !== undefined && { expiresInDays: opts.expires === 'never' ? null : opts.expires }),
      createdBy: actor,
    });
    await writeAudit(root.db, {
      actor,
      action: 'token_create',
      target: `ops_token:${info.name}`,
      details: { role: info.role, expires_at: info.expires_at },
    });
    process.stdout.write(
      `token "${info.name}" (${info.role}), expires ${info.expires_at ? info.expires_at.toISOString() : 'never'}\n` +
        'It is shown this once; only its hash is kept. Send it as Authorization: Bearer <token>.\n' +
        `${token}\n`,
    );
  });
}

export async function list(opts: { revoked?: boolean; json?: boolean }): Promise<void> {
  await withDb(async (root) => {
    const items = await listOpsTokens(root.db, { revoked: opts.revoked ?? false });
    if (opts.json) {
      process.stdout.write(`${JSON.stringify({ items }, null, 2)}\n`);
      return;
    }
    const cell = (given: string, w: number) => {
      const s = terminalSafe(given);
      return s.length > w ? `${s.slice(0, w - 1)}…` : s.padEnd(w);
    };
    const lines = [
      `${cell('NAME', 24)} ${cell('ROLE', 9)} ${cell('CREATED', 17)} ${cell('EXPIRES', 17)} ${cell('LAST USED', 17)} ${cell('CREATED BY', 28)}${opts.revoked ? ' REVOKED' : ''}`,
      ...items.map(
        (t) =>
          `${cell(t.name, 24)} ${cell(t.role, 9)} ${cell(day(t.created_at), 17)} ${cell(day(t.expires_at), 17)} ${cell(day(t.last_used_at), 17)} ${cell(t.created_by, 28)}${opts.revoked ? ` ${day(t.revoked_at)}` : ''}`,
      ),
    ];
    process.stdout.write(`${lines.join('\n')}\n${items.length ? '' : '(no tokens)\n'}`);
  });
}

export async function revoke(name: string): Promise<void> {
  await withDb(async (root) => {
    if (!(await revokeOpsToken(root.db, name))) {
      process.stderr.write(`rentbridge: no live token named "${name}"\n`);
      process.exitCode = 1;
      return;
    }
    await writeAudit(root.db, { actor: cliActor(), action: 'token_revoke', target: `ops_token:${name}` });
    process.stdout.write(`token "${name}" revoked: refused from now on by every process\n`);
  });
}
