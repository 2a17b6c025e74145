import { describe, expect, it } from 'vitest';
import {
  changedFieldDigests,
  isPersonalSearch,
  maskEmail,
  maskName,
  maskPersonal,
  maskPhone,
  personalDigest,
} from '../../src/personal-data.js';
import { buildCanary, canaryValuesIn } from '../support/canary.js';

/** Issue 51, item 2: the one list of personal fields and one mask per kind (src/personal-data.ts). */
describe('personal-data masks', () => {
  it('masks each kind as the contract shows it, never whole', () => {
    expect(maskEmail('jane.doe@example.com')).toBe('j•••@e•••.com');
    expect(maskPhone('5551231234')).toBe('••••••1234');
    expect(maskPhone('12')).toBe('••••••');
    expect(maskName('Jane Doe')).toBe('J. D.');
    expect(maskName('Zephyrine')).toBe('Z.');
  });

  describe('when a view carries a canary at every depth', () => {
    it('masks the listed fields, e-mails in any text, and JSON held in a text', () => {
      const canary = buildCanary();
      const command = {
        first_name: canary.first_name,
        last_name: canary.last_name,
        email: canary.email,
        phone: canary.phone,
        amount_cents: canary.amount_cents,
        paid_on: canary.paid_on,
      };
      const view = {
        key: canary.email,
        value: JSON.stringify({ specversion: '1.0', data: command }),
        steps: [{ what: `registration for ${canary.email} taken`, details: { targetId: canary.email } }],
        nested: { deeper: [command] },
        at: new Date('2026-11-01T00:00:00Z'),
        attempts: 3,
        actor: 'ana@ops.example',
      };
      const masked = maskPersonal(view);
      expect(canaryValuesIn(canary, JSON.stringify(masked))).toEqual([]);
      expect(masked.at).toBeInstanceOf(Date);
      expect(masked.attempts).toBe(3);
      // Who operates rentbridge is not a tenant: the audit's actor stays as it is.
      expect(masked.actor).toBe('ana@ops.example');
      expect(JSON.parse(masked.value)).toMatchObject({
        data: { last_name: 'Q.', phone: '••••••5309', amount_cents: '•••', paid_on: '2026-••-••' },
      });
      // The view given is not changed.
      expect(view.key).toBe(canary.email);
    });
  });

  it('tells a search by a personal value from a search by an id', () => {
    expect(isPersonalSearch('jane@example.com')).toBe(true);
    expect(isPersonalSearch('(555) 123-4567')).toBe(true);
    expect(isPersonalSearch('pay-123')).toBe(false);
    expect(isPersonalSearch('ENR_42')).toBe(false);
    expect(isPersonalSearch('b6e140be-a022-4240-a408-11ba20950856')).toBe(false);
    expect(isPersonalSearch('999999999')).toBe(false);
    expect(isPersonalSearch('5558675309')).toBe(true);
  });

  it('names the changed fields of a correction with a digest of each value, never the value', () => {
    const changed = changedFieldDigests(
      { data: { phone: '12', email: 'a@b.example', n: [1, 2] } },
      { data: { phone: '5558675309', email: 'a@b.example', n: [1] } },
    );
    expect(changed).toEqual({
      'data.phone': { from: personalDigest('12'), to: personalDigest('5558675309') },
      'data.n.1': { from: personalDigest(2), to: null },
    });
    expect(JSON.stringify(changed)).not.toContain('5558675309');
    expect(personalDigest('x')).toMatch(/^sha256:[0-9a-f]{16}$/);
  });
});
