import { randomBytes } from 'node:crypto';
import type { Db } from '../db/prisma.js';
import type { OpsRole } from './ops-roles.js';
import { hashSecret } from './ops-token-repository.js';

/**
 * Console sessions after single sign-on: a row per session in PostgreSQL, keyed by the SHA-256 of
 * the random id the cookie carries. Sign-out deletes the row, so the cookie is refused by every
 * process at once; expired rows are refused and pruned.
 */

export interface OpsSession {
  subject: string;
  name: string;
  role: OpsRole;
  csrfToken: string;
  expiresAt: Date;
}

export async function createOpsSession(
  db: Db,
  person: { subject: string; name: string; role: OpsRole },
  ttlSeconds: number,
): Promise<{ id: string; session: OpsSession }> {
  const id = randomBytes(32).toString('base64url');
  const session: OpsSession = {
    ...person,
    csrfToken: randomBytes(24).toString('base64url'),
    expiresAt: new Date(Date.now() + ttlSeconds * 1000),
  };
  await db.opsSession.create({ data: { idHash: hashSecret(id), ...session } });
  // Expired sessions of everyone go as a new one comes: the table stays the live sessions.
  await db.opsSession.deleteMany({ where: { expiresAt: { lt: new Date() } } });
  return { id, session };
}

export async function findOpsSession(db: Db, id: string): Promise<OpsSession | null> {
  const row = await db.opsSession.findUnique({ where: { idHash: hashSecret(id) } });
  if (!row || row.expiresAt.getTime() <= Date.now()) return null;
  return {
    subject: row.subject,
    name: row.name,
    role: row.role as OpsRole,
    csrfToken: row.csrfToken,
    expiresAt: row.expiresAt,
  };
}

export async function deleteOpsSession(db: Db, id: string): Promise<void> {
  await db.opsSession.deleteMany({ where: { idHash: hashSecret(id) } });
}
