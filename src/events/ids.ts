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
