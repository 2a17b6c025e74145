import express, { type Request, type Response, type Router } from 'express';
import * as oidc from 'openid-client';
import type { Db } from '../db/prisma.js';
import { writeAudit } from '../dead-letters/audit-repository.js';
import type { Logger } from '../logger.js';
import { CSRF_HEADER, personActor, readCookie, SESSION_COOKIE } from './ops-auth.js';
import { OPS_ROLES, type OpsRole } from './ops-roles.js';
import { createOpsSession, deleteOpsSession, findOpsSession } from './ops-session-repository.js';
import { signInPage } from './sign-in-pages.js';

/** Single sign-on settings (src/config/ops-auth-config.ts). */
export interface OidcSettings {
  issuer: string;
  clientId: string;
  /** Unset: a public client, PKCE alone. */
  clientSecret?: string;
  /** The callback as registered at the provider (…/ops/auth/callback). */
  redirectUrl: string;
  /** The claim holding the person's groups. Default `groups`. */
  rolesClaim: string;
  roleMap: Partial<Record<OpsRole, string[]>>;
  sessionTtlSeconds: number;
}

const LOGIN_COOKIE = 'rb_ops_login';

/** The highest role any of the person's claim values maps to; null: none. */
export function roleFromClaims(values: unknown, roleMap: OidcSettings['roleMap']): OpsRole | null {
  const held = new Set((Array.isArray(values) ? values : [values]).filter((v) => typeof v === 'string'));
  for (const role of [...OPS_ROLES].reverse()) {
    if ((roleMap[role] ?? []).some((value) => held.has(value))) return role;
  }
  return null;
}

function isLoopback(url: URL): boolean {
  return ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname);
}

function cookie(
  name: string,
  value: string,
  attrs: { path: string; maxAge: number; secure: boolean; sameSite: string },
): string {
  return [
    `${name}=${encodeURIComponent(value)}`,
    `Path=${attrs.path}`,
    `Max-Age=${attrs.maxAge}`,
    'HttpOnly',
    `SameSite=${attrs.sameSite}`,
    ...(attrs.secure ? ['Secure'] : []),
  ].join('; ');
}

/** The code exchanged (PKCE, state and nonce checked), then the ID token's claims (userinfo's beside). */
async function claimsOf(
  config: oidc.Configuration,
  settings: OidcSettings,
  req: Request,
  pending: { verifier: string; state: string; nonce: string },
): Promise<Record<string, unknown>> {
  // The current URL is rebuilt from the configured callback, never from the Host header.
  const current = new URL(settings.redirectUrl);
  current.search = new URL(req.originalUrl, 'http://x').search;
  const tokens = await oidc.authorizationCodeGrant(config, current, {
    pkceCodeVerifier: pending.verifier,
    expectedState: pending.state,
    expectedNonce: pending.nonce,
    idTokenExpected: true,
  });
  const claims: Record<string, unknown> = { ...tokens.claims() };
  if (claims[settings.rolesClaim] === undefined && tokens.access_token) {
    // Some providers put groups in userinfo only.
    const info = await oidc.fetchUserInfo(config, tokens.access_token, String(claims.sub));
    return { ...info, ...claims };
  }
  return claims;
}

/**
 * `/ops/auth`: OpenID Connect sign-in of the console (authorization code flow with PKCE, by
 * openid-client). `login` sends the browser to the provider with a fresh state, nonce and code
 * verifier (kept in a short-lived HttpOnly cookie); `callback` checks them, maps the roles claim
 * to a role (none: refused with a page that says so, audited), opens a session row and sets the
 * session cookie (HttpOnly, SameSite=Strict, Secure behind https); `logout` (POST, with the
 * anti-forgery header) deletes the row. Without settings only `methods` answers (`{ sso: false }`).
 */
export function createOidcRouter(options: { db: Db; logger: Logger; oidc?: OidcSettings }): Router {
  const router = express.Router();
  const settings = options.oidc;
  const logger = options.logger.child({ component: 'ops-sso' });
  router.get('/methods', (_req, res) => {
    res.json({ sso: Boolean(settings) });
  });
  if (!settings) return router;
  const { db } = options;
  const redirect = new URL(settings.redirectUrl);
  const secure = (req: Request) => redirect.protocol === 'https:' || req.secure;
  // The console's own path (/ops/ for /ops/auth/callback): the session cookie goes nowhere else.
  const consolePath = new URL('..', redirect).pathname;
  let discovered: Promise<oidc.Configuration> | null = null;

  function provider(): Promise<oidc.Configuration> {
    const issuer = new URL(settings!.issuer);
    discovered ??= oidc
      .discovery(
        issuer,
        settings!.clientId,
        settings!.clientSecret,
        settings!.clientSecret ? undefined : oidc.None(),
        // Plain http only for a provider on this machine (the demo, the tests).
        isLoopback(issuer) ? { execute: [oidc.allowInsecureRequests] } : undefined,
      )
      .catch((error: unknown) => {
        discovered = null; // tried again on the next sign-in
        throw error;
      });
    return discovered;
  }

  const unavailable = (res: Response, error: unknown) => {
    logger.warn({ err: error }, 'single sign-on unavailable');
    res
      .status(503)
      .type('html')
      .send(
        signInPage(
          'Single sign-on is unavailable',
          'The identity provider did not answer. Try again later, or sign in with a personal token (or the break-glass OPS_TOKEN).',
        ),
      );
  };

  router.get('/login', async (req, res) => {
    let config: oidc.Configuration;
    try {
      config = await provider();
    } catch (error) {
      unavailable(res, error);
      return;
    }
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const nonce = oidc.randomNonce();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: settings.redirectUrl,
      scope: 'openid profile email',
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      nonce,
    });
    // Lax: the provider's redirect back is a cross-site top-level GET, which must carry it.
    const value = Buffer.from(JSON.stringify({ verifier, state, nonce })).toString('base64url');
    res.setHeader(
      'Set-Cookie',
      cookie(LOGIN_COOKIE, value, {
        path: redirect.pathname,
        maxAge: 600,
        secure: secure(req),
        sameSite: 'Lax',
      }),
    );
    res.redirect(303, url.href);
  });

  router.get('/callback', async (req, res) => {
    const clearLogin = cookie(LOGIN_COOKIE, '', {
      path: redirect.pathname,
      maxAge: 0,
      secure: secure(req),
      sameSite: 'Lax',
    });
    let pending: { verifier: string; state: string; nonce: string };
    try {
      pending = JSON.parse(
        Buffer.from(readCookie(req, LOGIN_COOKIE) ?? '', 'base64url').toString(),
      ) as typeof pending;
      if (!pending.verifier || !pending.state || !pending.nonce) throw new Error('incomplete');
    } catch {
      res
        .status(400)
        .type('html')
        .send(
          signInPage(
            'Sign-in expired',
            'The sign-in took too long or was started elsewhere. Sign in again.',
            true,
          ),
        );
      return;
    }
    let config: oidc.Configuration;
    try {
      config = await provider();
    } catch (error) {
      unavailable(res, error);
      return;
    }
    const claims = await claimsOf(config, settings, req, pending).catch((error: unknown) => {
      logger.warn({ err: error }, 'sign-in refused by the provider or its answer failed the checks');
      return null;
    });
    if (!claims) {
      res.setHeader('Set-Cookie', clearLogin);
      res
        .status(401)
        .type('html')
        .send(
          signInPage(
            'Sign-in failed',
            'The identity provider did not confirm who you are. Sign in again.',
            true,
          ),
        );
      return;
    }
    const subject = String(claims.sub);
    const name = String(claims.name ?? claims.preferred_username ?? claims.email ?? subject).slice(0, 200);
    const role = roleFromClaims(claims[settings.rolesClaim], settings.roleMap);
    const actor = personActor(name, subject);
    if (!role) {
      await writeAudit(db, {
        actor,
        action: 'sign_in_refused',
        target: 'ops_console',
        details: { claim: settings.rolesClaim, values: claims[settings.rolesClaim] ?? null },
      });
      res.setHeader('Set-Cookie', clearLogin);
      res
        .status(403)
        .type('html')
        .send(
          signInPage(
            'No access to rentbridge ops',
            `You are signed in at the identity provider as ${name}, but none of your groups (claim "${settings.rolesClaim}") is given a role in rentbridge ops. Ask an admin to add your group to OPS_ROLE_MAP.`,
          ),
        );
      return;
    }
    const { id, session } = await createOpsSession(db, { subject, name, role }, settings.sessionTtlSeconds);
    await writeAudit(db, {
      actor,
      action: 'sign_in',
      target: 'ops_console',
      details: { role, expires_at: session.expiresAt },
    });
    res.setHeader('Set-Cookie', [
      clearLogin,
      cookie(SESSION_COOKIE, id, {
        path: consolePath,
        maxAge: settings.sessionTtlSeconds,
        secure: secure(req),
        sameSite: 'Strict',
      }),
    ]);
    res.redirect(303, consolePath);
  });

  router.post('/logout', async (req, res) => {
    const sid = readCookie(req, SESSION_COOKIE);
    const session = sid ? await findOpsSession(db, sid) : null;
    if (session && req.header(CSRF_HEADER) !== session.csrfToken) {
      res.status(403).json({
        error: {
          message: `sign-out must carry the ${CSRF_HEADER} header`,
          status: 403,
          code: 'csrf_failed',
        },
      });
      return;
    }
    if (sid && session) {
      await deleteOpsSession(db, sid);
      await writeAudit(db, {
        actor: personActor(session.name, session.subject),
        action: 'sign_out',
        target: 'ops_console',
      });
    }
    res.setHeader(
      'Set-Cookie',
      cookie(SESSION_COOKIE, '', { path: consolePath, maxAge: 0, secure: secure(req), sameSite: 'Strict' }),
    );
    res.json({ signed_out: Boolean(session) });
  });

  return router;
}
