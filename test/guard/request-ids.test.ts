import { describe, expect, it } from 'vitest';
import { REQUEST_ID_PATTERN } from '../../src/http/request-id.js';
import { readRequestId, requestIdBase, writeRequestId } from '../../src/guard/command-request-ids.js';

describe('guard request ids', () => {
  describe('when the command id fits spec 7.3', () => {
    it('derives attempt ids the partner keeps unchanged', () => {
      expect(writeRequestId('dec-42', 1)).toBe('dec-42.a1');
      expect(readRequestId('dec-42', 3, 2)).toBe('dec-42.a3.r2');
    });
  });

  describe('when the command id has other characters or is long', () => {
    it('sanitizes it, keeps it within 128 characters and keeps distinct ids distinct', () => {
      const a = writeRequestId(`pay/${'x'.repeat(190)}:1`, 12);
      const b = writeRequestId(`pay/${'x'.repeat(190)}:2`, 12);
      expect(a).toMatch(REQUEST_ID_PATTERN);
      expect(readRequestId(`pay/${'x'.repeat(190)}:1`, 999, 999)).toMatch(REQUEST_ID_PATTERN);
      expect(a).not.toBe(b);
      expect(requestIdBase('a b')).not.toBe(requestIdBase('a_b'));
    });
  });
});
