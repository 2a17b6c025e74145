import { SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.js';
import { createTokenManager } from '../../src/partner/token-manager.js';

const logger = createLogger({ level: 'silent' });

async function jwt(expSeconds: number): Promise<string> {
  return new SignJWT({})
    .setProtectedHeader({ alg: 'HS256' })
    .setExpirationTime(expSeconds)
    .sign(new TextEncoder().encode('k'.repeat(32)));
}

describe('token manager', () => {
  describe('when many calls ask for a token at once', () => {
    it('authenticates once', async () => {
      let calls = 0;
      const tokens = createTokenManager({
        logger,
        authenticate: async () => {
          calls++;
          await new Promise((r) => setTimeout(r, 20));
          return { token: await jwt(Math.floor(Date.now() / 1000) + 3600) };
        },
      });
      const all = await Promise.all(Array.from({ length: 20 }, () => tokens.current()));
      expect(new Set(all).size).toBe(1);
      expect(calls).toBe(1);
    });
  });

  describe('when the token nears its exp', () => {
    it('renews it before it expires, not before', async () => {
      let now = 1_000_000_000_000;
      let calls = 0;
      const tokens = createTokenManager({
        logger,
        now: () => now,
        authenticate: async () => {
          calls++;
          return { token: await jwt(now / 1000 + 600) }; // 10 minutes; renewed 60 s before
        },
      });
      await tokens.current();
      now += 500_000;
      await tokens.current();
      expect(calls).toBe(1);
      now += 50_000; // 50 s before exp
      await tokens.current();
      expect(calls).toBe(2);
    });
  });

  describe('when a stale token is invalidated after a 401', () => {
    it('renews once, however many calls report the same stale token', async () => {
      let calls = 0;
      const tokens = createTokenManager({
        logger,
        authenticate: async () => {
          calls++;
          return { token: await jwt(Math.floor(Date.now() / 1000) + 3600 + calls) };
        },
      });
      const stale = await tokens.current();
      tokens.invalidate(stale);
      const fresh = await tokens.current();
      tokens.invalidate(stale);
      expect(await tokens.current()).toBe(fresh);
      expect(calls).toBe(2);
    });
  });

  describe('when the token is not a JWT', () => {
    it('falls back to expires_in', async () => {
      let now = 0;
      let calls = 0;
      const tokens = createTokenManager({
        logger,
        now: () => now,
        authenticate: async () => {
          calls++;
          return { token: 'opaque', expiresInSeconds: 100 };
        },
      });
      await tokens.current();
      now = 80_000;
      await tokens.current();
      expect(calls).toBe(1);
      now = 95_000;
      await tokens.current();
      expect(calls).toBe(2);
    });
  });
});
