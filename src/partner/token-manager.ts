import { decodeJwt } from 'jose';
import type { Logger } from '../logger.js';

/**
 * Caches the API token for its lifetime (spec 5.6), read from the JWT's `exp`, and renews it
 * shortly before expiry. One renewal is in flight at a time however many calls wait for it.
 */
export interface TokenManager {
  /** A valid token, renewing it first when it is missing or about to expire. */
  current(): Promise<string>;
  /**
   * Drops the cached token (after a 401). Given the token that failed, drops it only if it is
   * still the cached one, so twenty calls failing with one stale token cause one renewal.
   */
  invalidate(staleToken?: string): void;
}

export interface IssuedToken {
  token: string;
  /** Lifetime from the token response, used only when the JWT carries no `exp`. */
  expiresInSeconds?: number;
}

/** How long before `exp` a token is renewed: a tenth of its life, at least 1 s, at most 60 s. */
export function renewalMarginMs(lifetimeMs: number): number {
  return Math.min(60_000, Math.max(1_000, lifetimeMs / 10));
}

/** When the token expires, in ms since the epoch: JWT `exp`, else `expires_in`, else 5 minutes. */
export function tokenExpiry(issued: IssuedToken, now: number): number {
  try {
    const { exp } = decodeJwt(issued.token);
    if (typeof exp === 'number') return exp * 1000;
  } catch {
    // Not a JWT we can read: fall back to the response's own lifetime.
  }
  return now + (issued.expiresInSeconds ?? 300) * 1000;
}

export function createTokenManager(deps: {
  authenticate: () => Promise<IssuedToken>;
  logger: Logger;
  now?: () => number;
}): TokenManager {
  const now = deps.now ?? Date.now;
  let cached: { token: string; renewAt: number } | undefined;
  let inFlight: Promise<string> | undefined;

  function renew(): Promise<string> {
    inFlight ??= (async () => {
      try {
        const issuedAt = now();
        const issued = await deps.authenticate();
        const expiresAt = tokenExpiry(issued, issuedAt);
        const renewAt = expiresAt - renewalMarginMs(expiresAt - issuedAt);
        cached = { token: issued.token, renewAt };
        deps.logger.info({ expiresAt: new Date(expiresAt).toISOString() }, 'partner token issued');
        return issued.token;
      } finally {
        inFlight = undefined;
      }
    })();
    return inFlight;
  }

  return {
    async current() {
      if (cached && now() < cached.renewAt) return cached.token;
      return renew();
    },
    invalidate(staleToken) {
      if (staleToken === undefined || cached?.token === staleToken) cached = undefined;
    },
  };
}
