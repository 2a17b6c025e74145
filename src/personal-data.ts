import { createHash } from 'node:crypto';

/**
 * Personal data, in one place (docs/privacy-masking.md, decision 052): which fields hold a
 * person's data, how each kind is masked, and the digest that stands for a value where a record
 * must say which value without holding it (the audit of a correction, of a reveal, of a search).
 * Every read path (ops API, console, CLI, trace, reconciliation) shows `maskPersonal(view)`;
 * only a reveal (POST /ops/api/reveal, `--reveal --reason` in the CLI), audited, shows values.
 *
 * A mask never shows a value whole: `j•••@e•••.com`, `••••••1234`, `J. D.`, `2026-••-••`, `•••`.
 */

export const BULLETS = '•••';

export type PersonalKind = 'email' | 'phone' | 'name' | 'amount' | 'date';

/** The one list: a field of this name, at any depth of any record, holds personal data. */
export const PERSONAL_FIELDS: Readonly<Record<string, PersonalKind>> = {
  email: 'email',
  first_name: 'name',
  last_name: 'name',
  middle_name: 'name',
  full_name: 'name',
  phone: 'phone',
  phone_number: 'phone',
  amount_cents: 'amount',
  amount: 'amount',
  paid_on: 'date',
  paid_at: 'date',
  payment_date: 'date',
  date_of_birth: 'date',
};

/**
 * Fields that name the people who operate rentbridge (the audit's actor, who resolved a letter),
 * not the tenants it carries: left as they are, even when they are e-mail addresses.
 */
const OPERATOR_FIELDS = new Set(['actor', 'resolvedBy', 'resolved_by', 'subject']);

/** An e-mail address inside any text: a Kafka key, a trace's target, an error message. */
const EMAIL_IN_TEXT = /[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}/g;
const EMAIL_ANYWHERE = new RegExp(EMAIL_IN_TEXT.source);
const EMAIL_WHOLE = /^[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}$/;

export function maskEmail(value: string): string {
  const at = value.lastIndexOf('@');
  if (at <= 0) return BULLETS;
  const domain = value.slice(at + 1);
  const dot = domain.lastIndexOf('.');
  const tld = dot > 0 ? domain.slice(dot) : '';
  return `${value[0]}${BULLETS}@${domain[0] ?? ''}${BULLETS}${tld}`;
}

/** The last four digits of a long number, nothing of a short one (four of six would be most of it). */
export function maskPhone(value: string): string {
  const digits = value.replace(/\D/g, '');
  return digits.length >= 8 ? `••••••${digits.slice(-4)}` : '••••••';
}

/** Initials: `Jane Doe` → `J. D.`. */
export function maskName(value: string): string {
  const words = value
    .trim()
    .split(/[\s-]+/u)
    .filter(Boolean);
  return words.length === 0 ? BULLETS : words.map((w) => `${[...w][0]!.toUpperCase()}.`).join(' ');
}

/** The year of a date, not the day: `2026-11-01` → `2026-••-••`. */
export function maskDate(value: string): string {
  const year = /^(\d{4})-/.exec(value)?.[1];
  return year ? `${year}-••-••` : BULLETS;
}

export function maskValue(kind: PersonalKind, value: unknown): unknown {
  if (value === null || value === undefined) return value;
  const text = value instanceof Date ? value.toISOString() : String(value);
  switch (kind) {
    case 'email':
      return maskEmail(text);
    case 'phone':
      return maskPhone(text);
    case 'name':
      return maskName(text);
    case 'date':
      return maskDate(text);
    case 'amount':
      return BULLETS;
  }
}

/** Whether a text holds a mask (two bullets or more): a masked view copied back as data. */
export function holdsMask(text: string): boolean {
  return text.includes('••');
}

export function isEmail(text: string): boolean {
  return EMAIL_WHOLE.test(text.trim());
}

/** Every e-mail address inside a text, masked; the rest of the text as it is. */
export function maskText(text: string): string {
  return text.replace(EMAIL_IN_TEXT, (email) => maskEmail(email));
}

/** A text that is itself JSON (a dead letter's value, a stored correction): masked inside. */
function maskJsonText(text: string): string | null {
  const first = text.trimStart()[0];
  if (first !== '{' && first !== '[') return null;
  try {
    return JSON.stringify(maskPersonal(JSON.parse(text) as unknown));
  } catch {
    return null;
  }
}

/**
 * A view with every personal value masked, at any depth: the fields of PERSONAL_FIELDS by their
 * kind, e-mail addresses in any text (a Kafka key, a trace step), and the same inside texts that
 * are JSON (a dead letter's value). Dates and other non-plain objects are kept as they are.
 */
export function maskPersonal<T>(value: T): T {
  return maskAny(value) as T;
}

function maskAny(value: unknown): unknown {
  if (typeof value === 'string') return maskJsonText(value) ?? maskText(value);
  if (Array.isArray(value)) return value.map(maskAny);
  if (value === null || typeof value !== 'object') return value;
  if (Object.getPrototypeOf(value) !== Object.prototype && Object.getPrototypeOf(value) !== null) {
    return value;
  }
  const out: Record<string, unknown> = {};
  for (const [key, field] of Object.entries(value as Record<string, unknown>)) {
    const kind = PERSONAL_FIELDS[key];
    if (kind && (typeof field === 'string' || typeof field === 'number' || field instanceof Date))
      out[key] = maskValue(kind, field);
    else out[key] = OPERATOR_FIELDS.has(key) ? field : maskAny(field);
  }
  return out;
}

/**
 * What stands for a value where a record must tell values apart without holding them (an audit
 * entry): `sha256:` and the first 16 hex digits. Not a secret: a short value (a phone number) can
 * be found again by trying every one; it keeps the value out of sight, not out of reach.
 */
export function personalDigest(value: unknown): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return `sha256:${createHash('sha256')
    .update(text ?? 'null', 'utf8')
    .digest('hex')
    .slice(0, 16)}`;
}

/**
 * A search text that is a personal value (an e-mail address anywhere in it, or a phone number: 10
 * to 15 digits and nothing but phone punctuation): searching by it tells whether that person is
 * here, so it is a reveal. Ids are not phones: a UUID or `pay-20261101` has letters, an
 * application id has fewer digits.
 */
export function isPersonalSearch(text: string | undefined): boolean {
  if (!text) return false;
  if (EMAIL_ANYWHERE.test(text)) return true;
  const trimmed = text.trim();
  const digits = trimmed.replace(/\D/g, '').length;
  return /^\+?[\d\s().-]+$/.test(trimmed) && digits >= 10 && digits <= 15;
}

/** The fields two JSON values differ in (dot paths), each with a digest of its old and new value. */
export function changedFieldDigests(
  before: unknown,
  after: unknown,
): Record<string, { from: string | null; to: string | null }> {
  const a = flatten(before);
  const b = flatten(after);
  const changed: Record<string, { from: string | null; to: string | null }> = {};
  for (const path of new Set([...a.keys(), ...b.keys()])) {
    const x = a.get(path);
    const y = b.get(path);
    if (JSON.stringify(x) === JSON.stringify(y)) continue;
    changed[path] = {
      from: x === undefined ? null : personalDigest(x),
      to: y === undefined ? null : personalDigest(y),
    };
  }
  return changed;
}

function flatten(value: unknown, prefix = '', out = new Map<string, unknown>()): Map<string, unknown> {
  if (value !== null && typeof value === 'object') {
    const entries = Array.isArray(value)
      ? value.map((v, i) => [String(i), v] as const)
      : Object.entries(value as Record<string, unknown>);
    if (entries.length === 0) out.set(prefix || '.', value);
    for (const [k, v] of entries) flatten(v, prefix ? `${prefix}.${k}` : k, out);
  } else {
    out.set(prefix || '.', value);
  }
  return out;
}

/** What can be revealed, one item at a time (POST /ops/api/reveal, `--reveal` in the CLI). */
export const REVEAL_KINDS = ['dead_letter', 'trace', 'reconciliation_item'] as const;
export type RevealKind = (typeof REVEAL_KINDS)[number];

/** An item as a reveal's audit entry names it: by its id, or by a digest when the id is personal. */
export function revealTarget(kind: string, id: string | number): string {
  const text = String(id);
  return `${kind}:${isEmail(text) || isPersonalSearch(text) ? personalDigest(text.trim().toLowerCase()) : text}`;
}
