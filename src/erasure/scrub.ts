/**
 * What an erasure overwrites in a kept row (docs/privacy.md): the personal fields of a JSON value
 * by name, at any depth, and any text that still carries one of the person's values (an error
 * message naming the e-mail, a dead letter's body). Ids, states and times stay: the row still tells
 * what happened, never to whom.
 */

/** The fields that hold a person's data, wherever they appear (the Partner API's and the PMS's names). */
export const PERSONAL_FIELDS: ReadonlySet<string> = new Set([
  'email',
  'first_name',
  'last_name',
  'middle_name',
  'name',
  'full_name',
  'phone',
  'phone_number',
  'date_of_birth',
  'dob',
  'ssn',
  'address',
  'street',
  'amount_cents',
  'amount',
  'paid_on',
  'paid_at',
  'due_on',
]);

export const ERASED = '[erased]';

/**
 * The person's own values, to find them in free text: the e-mail always; a name or phone only when
 * it is long enough not to match ordinary words (a 2-letter name is replaced only where it is a
 * whole value).
 */
export interface Needles {
  /** Lower-cased; matched without case. */
  substrings: string[];
  /** Whole values (short names), matched without case. */
  whole: string[];
}

export function needlesOf(email: string, values: Iterable<string>): Needles {
  const substrings = new Set([email.trim().toLowerCase()]);
  const whole = new Set<string>();
  for (const raw of values) {
    const v = raw.trim().toLowerCase();
    if (v.length >= 4) substrings.add(v);
    else if (v.length > 0) whole.add(v);
  }
  return { substrings: [...substrings], whole: [...whole] };
}

/** The text with every needle replaced by `[erased]`; unchanged when none is in it. */
export function scrubText(text: string, needles: Needles): string {
  const lower = text.toLowerCase();
  if (needles.whole.includes(lower.trim())) return ERASED;
  let out = text;
  for (const n of needles.substrings) {
    let at = out.toLowerCase().indexOf(n);
    while (at >= 0) {
      out = `${out.slice(0, at)}${ERASED}${out.slice(at + n.length)}`;
      at = out.toLowerCase().indexOf(n, at + ERASED.length);
    }
  }
  return out;
}

/** The value with personal fields set to null and needles taken out of every string. */
export function scrubJson(value: unknown, needles: Needles): unknown {
  if (typeof value === 'string') return scrubText(value, needles);
  if (Array.isArray(value)) return value.map((v) => scrubJson(v, needles));
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value as Record<string, unknown>).map(([k, v]) => [
      k,
      PERSONAL_FIELDS.has(k) ? null : scrubJson(v, needles),
    ]),
  );
}

/** A JSON text (a Kafka message as kept) scrubbed; text that is not JSON is scrubbed as text. */
export function scrubJsonText(text: string, needles: Needles): string {
  try {
    return JSON.stringify(scrubJson(JSON.parse(text), needles));
  } catch {
    return scrubText(text, needles);
  }
}

/** The person's values found in records and commands: names and phone, for `needlesOf`. */
export function personalValuesOf(value: unknown, into: Set<string>): void {
  if (Array.isArray(value)) value.forEach((v) => personalValuesOf(v, into));
  else if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      if (PERSONAL_FIELDS.has(k) && typeof v === 'string' && !/^\d{4}-\d{2}-\d{2}/.test(v)) into.add(v);
      else personalValuesOf(v, into);
    }
  }
}
