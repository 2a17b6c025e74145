import { describe, expect, it } from 'vitest';
import { withVersion } from '../../src/poller/record-version.js';

describe('withVersion', () => {
  describe('when a record carries id and updated_at', () => {
    it('keeps them', () => {
      expect(withVersion({ id: 7, updated_at: '2026-01-01T00:00:00Z', a: 1 })).toEqual({
        id: '7',
        updated_at: '2026-01-01T00:00:00Z',
        a: 1,
      });
    });
  });

  describe('when a record has no updated_at', () => {
    it('derives a version from its content, whatever the key order', () => {
      const a = withVersion({ id: 'i1', kind: 'x', detail: { b: 1, c: 2 } });
      const b = withVersion({ detail: { c: 2, b: 1 }, kind: 'x', id: 'i1' });
      expect(a.updated_at).toMatch(/^sha256:[0-9a-f]{32}$/);
      expect(b.updated_at).toBe(a.updated_at);
    });

    it('derives a new version when the content changes', () => {
      const a = withVersion({ id: 'i1', kind: 'x' });
      const b = withVersion({ id: 'i1', kind: 'y' });
      expect(b.updated_at).not.toBe(a.updated_at);
    });
  });

  describe('when a record has no id', () => {
    it('derives one from its scope and content', () => {
      const a = withVersion({ kind: 'x' }, 'customer:1');
      const b = withVersion({ kind: 'x' }, 'customer:2');
      expect(a.id).toMatch(/^sha256:/);
      expect(withVersion({ kind: 'x' }, 'customer:1').id).toBe(a.id);
      expect(b.id).not.toBe(a.id);
    });
  });
});
