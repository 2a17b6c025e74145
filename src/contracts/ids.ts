import { z } from 'zod';

/**
 * The one pattern of ids that enter rentbridge in commands and webhooks (docs/glossary.md "id"):
 * 1 to 128 characters of `A-Z a-z 0-9 _ . -`, and never `.` or `..` alone (a dot segment would
 * move a write to another URL). The same alphabet and length as a request id (spec 7.3), short
 * enough for every index. Integer ids (the Partner API's) are taken as their decimal text.
 */
export const ID_PATTERN = /^(?!\.{1,2}$)[A-Za-z0-9_.-]{1,128}$/;

export const ID_RULE = '1 to 128 characters of A-Z a-z 0-9 _ . - (not "." or "..")';

/** An id as text, checked against ID_PATTERN. */
export const idString = z.string().regex(ID_PATTERN, ID_RULE);

/** An id given as text or as a non-negative integer; always text after parsing. */
export const idStringOrNumber = z
  .union([idString, z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER)])
  .transform(String);

export function isValidId(value: string): boolean {
  return ID_PATTERN.test(value);
}

/**
 * A PMS's own ids (command ids, `pms_reference`) are the PMS's business, not ours (issue 27): any
 * text of 1 to 255 characters (code points) without control characters (C0, DEL, C1) or unpaired
 * surrogates, so `pms:7f3/decision #7 für Wohnung` is taken as it is. They never go into a
 * Partner API path; the request ids derived from them are encoded to fit spec 7.3
 * (src/guard/machine/command-record.ts).
 */
const CONTROL =
  // eslint-disable-next-line no-control-regex -- control characters are exactly what must be refused
  /[\u0000-\u001f\u007f-\u009f]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

export const PMS_ID_RULE = '1 to 255 characters, no control characters';

export function isValidPmsId(value: string): boolean {
  const length = [...value].length;
  return length >= 1 && length <= 255 && !CONTROL.test(value);
}

/** A PMS's own id as text (PMS_ID_RULE). */
export const pmsIdString = z
  .string()
  .min(1)
  // The pattern is what the published JSON schema shows; the refinement adds the length in code
  // points and the surrogate pairing, which a JSON-schema pattern cannot say.
  // eslint-disable-next-line no-control-regex -- control characters are exactly what must be refused
  .regex(/^[^\u0000-\u001f\u007f-\u009f]+$/, PMS_ID_RULE)
  .refine(isValidPmsId, PMS_ID_RULE);
