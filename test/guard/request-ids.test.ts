import { describe, expect, it } from 'vitest';
import { REQUEST_ID_PATTERN } from '../../src/http/request-id.js';
import {
  hashedRequestIdBase,
  plainRequestIdBase,
  preferredRequestIdBase,
  readRequestId,
  writeRequestId,
} from '../../src/guard/machine/command-record.js';
import type { CommandIdentity } from '../../src/contracts/command-contracts.js';

const acme = (commandId: string, commandType: CommandIdentity['commandType'] = 'rental_payment') => ({
  source: 'acme',
  commandType,
  commandId,
});

describe('guard request ids', () => {
  describe('when the command id fits spec 7.3', () => {
    it('is the base unchanged, and attempt ids the partner keeps unchanged follow from it', () => {
      expect(preferredRequestIdBase(acme('dec-42'))).toBe('dec-42');
      expect(writeRequestId('dec-42', 1)).toBe('dec-42.a1');
      expect(readRequestId('dec-42', 3, 2)).toBe('dec-42.a3.r2');
    });
  });

  describe('when the command id has other characters or is long', () => {
    it('encodes it within spec 7.3, stable, and keeps distinct ids distinct', () => {
      const long = (n: number) => acme(`pay/${'ü'.repeat(190)} #${n}`);
      const a = preferredRequestIdBase(long(1));
      expect(plainRequestIdBase(long(1).commandId)).toBeNull();
      expect(writeRequestId(a, 12)).toMatch(REQUEST_ID_PATTERN);
      expect(readRequestId(a, 999, 999)).toMatch(REQUEST_ID_PATTERN);
      expect(preferredRequestIdBase(long(1))).toBe(a);
      expect(a).not.toBe(preferredRequestIdBase(long(2)));
      expect(preferredRequestIdBase(acme('a b'))).not.toBe(preferredRequestIdBase(acme('a_b')));
      expect(preferredRequestIdBase(acme('pms:7f3/decision #7 für Wohnung'))).toMatch(
        /^pms_7f3_decision__7_f_r_Wohnung-[0-9a-f]{16}$/,
      );
    });
  });

  describe('when two identities share a command id', () => {
    it('gives each its own encoded base (the hash is over source, type and id)', () => {
      const bases = new Set([
        hashedRequestIdBase(acme('42')),
        hashedRequestIdBase(acme('42', 'application_decision')),
        hashedRequestIdBase({ ...acme('42'), source: 'beta' }),
        '42',
      ]);
      expect(bases.size).toBe(4);
      for (const base of bases) expect(writeRequestId(base, 1)).toMatch(REQUEST_ID_PATTERN);
    });
  });
});
