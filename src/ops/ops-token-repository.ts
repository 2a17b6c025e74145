import { createHash, randomBytes } from 'node:crypto';
import type { Db } from '../db/prisma.js';
import { AppError } from '../errors.js';
import type { OpsRole } from './ops-roles.js';

/**
 * Personal ops API tokens (`rentbridge ops-token`, the console's and the API's /tokens). The
 * token is shown once, at creation; only its SHA-256 is stored (the token is 256 random bits, so
 * a fast hash is enough: nothing to guess). Every request looks its token up in PostgreSQL, so a
 * revocation holds in every process at once (docs/decisions/044-ops-access-and-audit-chain.md).
 */

export const TOKEN_PREFIX = 'rbo_';

export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

export interface OpsTokenInfo {
  name: string;
  role: OpsRole;
  created_by: string;
  created_at: Date;
  expires_at: Date | null;
  last_used_at: Date | null;
  revoked_at: Date | null;
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9_.@-]{0,99}$/;

export function checkTokenName(name: string): string {
  if (!NAME.test(name)) {
    throw new AppError(
      400,
      'validation_error',
      'name: 1 to 100 of A-Z a-z 0-9 _ . @ -, starting with a letter or digit',
    );
  }
  return name;
}

/**
 * How long a personal token lives unless its creator says otherwise (issue 51): a token forgotten in
 * a script or a shell history stops working by itself. `never` must be asked for.
 */
export const DEFAULT_TOKEN_DAYS = 90;

/**
 * @param input.expiresInDays days until the token expires; `null`: never (asked for explicitly);
 * unset: DEFAULT_TOKEN_DAYS.
 */
export async function createOpsToken(
  db: Db,
  input: { name: string; role: OpsRole; expiresInDays?: number | null; createdBy: string },
): Promise<{ token: string; info: OpsTokenInfo }> {
  checkTokenName(input.name);
  const token = `${TOKEN_PREFIX}${randomBytes(32).toString('base64url')}`;
  const days = input.expiresInDays === undefined ? DEFAULT_TOKEN_DAYS : input.expiresInDays;
  const expiresAt = days === null ? null : new Date(Date.now() + days * 86_400_000);
  try {
    const row = await db.opsToken.create({
      data: {
        name: input.name,
        role: input.role,
        tokenHash: hashSecret(token),
        createdBy: input.createdBy,
        expiresAt,
      },
    });
    return { token, info: toInfo(row) };
  } catch (error) {
    if ((error as { code?: string }).code === 'P2002' || /unique/i.test(String(error))) {
      throw new AppError(
        409,
        'conflict',
        `a token named "${input.name}" exists: revoke it first or choose another name`,
      );
    }
    throw error;
  }
}

function toInfo(row: {
  name: string;
  role: string;
  createdBy: string;
  createdAt: Date;
  expiresAt: Date | null;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
}): OpsTokenInfo {
  return {
    name: row.name,
    role: row.role as OpsRole,
    created_by: row.createdBy,
    created_at: row.createdAt,
    expires_at: row.expiresAt,
    last_used_at: row.lastUsedAt,
    revoked_at: row.revokedAt,
  };
}

/** Live tokens first by name, then revoked ones (newest first); never the token or its hash. */
export async function listOpsTokens(db: Db, options: { revoked?: boolean } = {}): Promise<OpsTokenInfo[]> {
  const rows = await db.opsToken.findMany({
    where: options.revoked ? {} : { revokedAt: null },
    orderBy: [{ revokedAt: { sort: 'desc', nulls: 'first' } }, { name: 'asc' }],
  });
  return rows.map(toInfo);
}

/** Revokes the live token of that name; false when there is none. */
export async function revokeOpsToken(db: Db, name: string): Promise<boolean> {
  const { count } = await db.opsToken.updateMany({
    where: { name, revokedAt: null },
    data: { revokedAt: new Date() },
  });
  return count > 0;
}

/** last_used_at is written at most once a minute per token: not a write per request. */
const TOUCH_MS = 60_000;

/** The live, unexpired token with this value, or null. */
export async function findOpsToken(db: Db, token: string): Promise<{ name: string; role: OpsRole } | null> {
  const row = await db.opsToken.findUnique({ where: { tokenHash: hashSecret(token) } });
  const now = Date.now();
  if (!row || row.revokedAt || (row.expiresAt && row.expiresAt.getTime() <= now)) return null;
  if (!row.lastUsedAt || now - row.lastUsedAt.getTime() > TOUCH_MS) {
    await db.opsToken.update({ where: { id: row.id }, data: { lastUsedAt: new Date(now) } });
  }
  return { name: row.name, role: row.role as OpsRole };
}
