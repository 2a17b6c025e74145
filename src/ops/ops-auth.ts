import { createHash, timingSafeEqual } from 'node:crypto';
import type { Request, RequestHandler, Response } from 'express';
import type { Db } from '../db/prisma.js';
import { writeAudit } from '../dead-letters/audit-repository.js';
import { sendError } from '../http/error-envelope.js';
import type { Logger } from '../logger.js';
import { roleAllows, routeFor, type OpsRole } from './ops-roles.js';
import { findOpsSession } from './ops-session-repository.js';
import { findOpsToken } from './ops-token-repository.js';

/** Who is calling the ops API: the audit's actor comes from here, never from a header. */
export interface OpsIdentity {
  kind: 'person' | 'token' | 'break-glass';
  /** As audit_log records it: `Name [subject]`, `token:<name>` or `break-glass`. */
  actor: string;
  name: string;
  role: OpsRole;
  subject?: string;
  /** A console session's anti-forgery token: every state-changing request echoes it. */
  csrfToken?: string;
  expiresAt?: Date;
}

export const SESSION_COOKIE = 'rb_ops_session';
export const CSRF_HEADER = 'x-csrf-token';

export function personActor(name: string, subject: string): string {
  return `${name} [${subject}]`;
}

/** The identity the auth middleware put on the response. */
export function identityOf(res: Response): OpsIdentity {
  const identity = res.locals.opsIdentity as OpsIdentity | undefined;
  if (!identity) throw new Error('no ops identity: the route is not behind createOpsAuth');
  return identity;
}

export function readCookie(req: Request, name: string): string | undefined {
  for (const part of (req.header('cookie') ?? '').split(';')) {
    const at = part.indexOf('=');
    if (at > 0 && part.slice(0, at).trim() === name) return decodeURIComponent(part.slice(at + 1).trim());
  }
  return undefined;
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

const sameSecret = (a: string, b: string) => timingSafeEqual(digest(a), digest(b));
const changesState = (method: string) => !['GET', 'HEAD', 'OPTIONS'].includes(method);

export interface OpsAuthOptions {
  db: Db;
  /** OPS_TOKEN, the break-glass admin credential; unset: only personal tokens and sessions. */
  opsToken: string | undefined;
  logger: Logger;
}

/** Break-glass reads are audited at most once a minute per process (every write is audited). */
const BREAK_GLASS_READ_MS = 60_000;

/**
 * Every /ops/api request: who is it (bearer OPS_TOKEN → break-glass admin; a bearer personal
 * token → its name and role; else the console's session cookie, with its anti-forgery token on
 * every state-changing request), and may that role do this (OPS_API_ROUTES). Refusals are 401
 * (nobody: no credential, or a token unknown, revoked or expired), 403 `forbidden` naming the role
 * needed (audited).
 */
export function createOpsAuth(options: OpsAuthOptions): RequestHandler {
  const { db } = options;
  const breakGlass = options.opsToken;
  let lastBreakGlassRead = 0;

  async function identify(req: Request, res: Response): Promise<OpsIdentity | null> {
    const bearer = /^Bearer\s+(.+)$/i.exec(req.header('authorization') ?? '')?.[1]?.trim();
    if (bearer) {
      if (breakGlass && sameSecret(bearer, breakGlass)) {
        return { kind: 'break-glass', actor: 'break-glass', name: 'break-glass', role: 'admin' };
      }
      const token = await findOpsToken(db, bearer);
      if (token) return { kind: 'token', actor: `token:${token.name}`, name: token.name, role: token.role };
      // An unknown, revoked or expired token authenticates nobody: 401 whether OPS_TOKEN is set or
      // not (RFC 6750 section 3.1, `invalid_token`); 403 is for a known caller without the role.
      res.setHeader('WWW-Authenticate', 'Bearer realm="rentbridge-ops", error="invalid_token"');
      sendError(req, res, 401, 'unauthenticated', 'invalid ops token (unknown, revoked or expired)');
      return null;
    }
    const sid = readCookie(req, SESSION_COOKIE);
    const session = sid ? await findOpsSession(db, sid) : null;
    if (!session) {
      res.setHeader('WWW-Authenticate', 'Bearer realm="rentbridge-ops"');
      sendError(
        req,
        res,
        401,
        'unauthenticated',
        sid
          ? 'your session has ended (signed out or expired): sign in again'
          : 'sign in to the console, or send Authorization: Bearer <token>',
      );
      return null;
    }
    if (changesState(req.method)) {
      const sent = req.header(CSRF_HEADER) ?? '';
      if (!sent || !sameSecret(sent, session.csrfToken)) {
        sendError(
          req,
          res,
          403,
          'csrf_failed',
          `a state-changing request must carry the session's ${CSRF_HEADER} header`,
        );
        return null;
      }
    }
    return {
      kind: 'person',
      actor: personActor(session.name, session.subject),
      name: session.name,
      role: session.role,
      subject: session.subject,
      csrfToken: session.csrfToken,
      expiresAt: session.expiresAt,
    };
  }

  return async (req, res, next) => {
    res.setHeader('Cache-Control', 'no-store');
    const identity = await identify(req, res);
    if (!identity) return;
    res.locals.opsIdentity = identity;
    const route = routeFor(req.method, req.path);
    const target = `ops_api:${req.method} ${route?.path ?? req.path}`;
    if (identity.kind === 'break-glass') {
      const now = Date.now();
      if (changesState(req.method) || now - lastBreakGlassRead > BREAK_GLASS_READ_MS) {
        if (!changesState(req.method)) lastBreakGlassRead = now;
        await writeAudit(db, {
          actor: 'break-glass',
          action: 'break_glass',
          target,
          details: { path: req.path },
        });
      }
    }
    const need = route?.role ?? 'admin';
    if (!roleAllows(identity.role, need)) {
      await writeAudit(db, {
        actor: identity.actor,
        action: 'forbidden',
        target,
        details: { role_needed: need, role: identity.role, path: req.path },
      });
      sendError(
        req,
        res,
        403,
        'forbidden',
        `this needs the ${need} role; ${identity.name} has ${identity.role}`,
        {
          role_needed: need,
        },
      );
      return;
    }
    next();
  };
}
