import { describe, expect, it } from 'vitest';
import {
  keyPinnedReadBack,
  SNAPSHOT_KEY_FACT,
  type ReadBackStrategy,
  type ReadContext,
  type Snapshot,
} from '../../src/guard/read-backs/read-back.js';
import { ownKeyId } from '../../src/partner/source-partners.js';

/** Issue 34: a snapshot and its read-back are compared only when one key read both. */
const inner: ReadBackStrategy<string> = {
  snapshot: async () => ({
    found: true,
    status: 'submitted',
    updated_at: null,
    taken_at: '2026-11-25T10:00:00Z',
  }),
  verdict: async () => 'applied',
  write: async (_c, requestId) => ({ data: {}, requestId, status: 200 }) as never,
};

function context() {
  const missing: string[] = [];
  const ctx: ReadContext = { nextReadId: () => 'r1', missing: (m) => missing.push(m) };
  return { ctx, missing };
}

describe('a read-back pinned to the key of its snapshot', () => {
  const beta = ownKeyId('beta-access-key');

  describe('when the snapshot is read', () => {
    it('names the key that read it, by a digest, never the key', async () => {
      const snapshot = await keyPinnedReadBack(inner, beta).snapshot('c', context().ctx);
      expect(snapshot[SNAPSHOT_KEY_FACT]).toBe(beta);
      expect(beta).toMatch(/^own:[0-9a-f]{12}$/);
      expect(JSON.stringify(snapshot)).not.toContain('beta-access-key');
    });
  });

  describe('when the read-back reads with the same key', () => {
    it("gives the strategy's verdict", async () => {
      const strategy = keyPinnedReadBack(inner, beta);
      const { ctx, missing } = context();
      expect(await strategy.verdict('c', await strategy.snapshot('c', ctx), ctx)).toBe('applied');
      expect(missing).toEqual([]);
    });
  });

  describe('when PMS_PARTNER_KEYS changed between the snapshot and the read-back', () => {
    it.each([
      ['the deployment key then the source key', 'deployment', beta],
      ['the source key then the deployment key', beta, 'deployment'],
      ['one source key then a new one', beta, ownKeyId('beta-access-key-2')],
    ])('with %s, it is unknown and says why', async (_case, before, after) => {
      const snapshot = await keyPinnedReadBack(inner, before).snapshot('c', context().ctx);
      const { ctx, missing } = context();
      expect(await keyPinnedReadBack(inner, after).verdict('c', snapshot, ctx)).toBe('unknown');
      expect(missing).toEqual([expect.stringMatching(/another Partner API key .*PMS_PARTNER_KEYS changed/)]);
    });
  });

  describe('when the snapshot was stored before snapshots named their key', () => {
    it('is read as before', async () => {
      const old: Snapshot = {
        found: true,
        status: 'submitted',
        updated_at: null,
        taken_at: '2026-11-25T10:00:00Z',
      };
      const { ctx } = context();
      expect(await keyPinnedReadBack(inner, beta).verdict('c', old, ctx)).toBe('applied');
    });
  });
});
