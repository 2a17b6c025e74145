import { randomUUID } from 'node:crypto';

/**
 * The canary person (issue 51): distinctive names, e-mail, phone, a payment's amount and date,
 * followed through every path that carries personal data. A test looks for each of `wholeValues`
 * in what a reader sees (an API answer, a CLI's output, the audit, a table's columns): found whole
 * there, a personal value leaked. Unique per call (the e-mail), so tests sharing a broker or a
 * sandbox never see each other's canary.
 */
export interface Canary {
  first_name: string;
  last_name: string;
  email: string;
  phone: string;
  amount_cents: number;
  paid_on: string;
  /** Every value above as text, as it would appear whole in any output. */
  wholeValues: string[];
}

export function buildCanary(overrides: Partial<Omit<Canary, 'wholeValues'>> = {}): Canary {
  const tag = randomUUID().slice(0, 8);
  const person = {
    first_name: 'Zephyrine',
    last_name: 'Quackenbush',
    email: `zephyrine.quackenbush.${tag}@canary-mail.example`,
    phone: '5558675309',
    amount_cents: 987_653,
    paid_on: '2026-10-17',
    ...overrides,
  };
  return {
    ...person,
    wholeValues: [
      person.first_name,
      person.last_name,
      person.email,
      person.phone,
      String(person.amount_cents),
      person.paid_on,
    ],
  };
}

/** The canary's values found whole in `text` (case-insensitive): [] when none leaked. */
export function canaryValuesIn(canary: Canary, text: string): string[] {
  const haystack = text.toLowerCase();
  return canary.wholeValues.filter((v) => haystack.includes(v.toLowerCase()));
}
