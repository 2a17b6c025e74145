import { createHash } from 'node:crypto';
import type { CommandIdentity } from '../../contracts/command-identity.js';

/**
 * The X-Request-Id of every Partner API call the guard makes is derived from the command, so the
 * partner's logs, the sandbox ledger, our rows and the outcome all name the same attempt. Spec
 * 7.3 keeps an id of 1 to 128 characters of `A-Z a-z 0-9 _ . -` unchanged; anything else would be
 * replaced by a UUID, losing the link.
 *
 * Each command has a request-id BASE, chosen once when its guard row is created and kept on the
 * row (`commands.request_id_base`, unique), so that `trace`, the console and the outcome tie
 * every call back to its command (docs/decisions/020-command-identity.md):
 * - a command id that fits (1 to 96 of the alphabet, leaving room for `.a<n>.r<k>`) is the base
 *   as it is, as before identities: `pay-42` → `pay-42.a1`;
 * - otherwise, or when another identity already holds that base (acme's payment `42` after
 *   acme's decision `42`, or beta's payment `42`), the base is the id with every other character
 *   turned into `_`, cut to 79 characters, then `-` and the first 16 hex digits of the SHA-256
 *   of `<source> NUL <command type> NUL <command id>`: `pms_7f3_decision__7_f_r_Wohnung-1f0c…`.
 *   The hash is over the whole identity, so two identities never share a base.
 */
const SAFE = /^[A-Za-z0-9_.-]+$/;
const MAX_BASE = 96;

/** The base a command id keeps when it fits and no other identity holds it; else null. */
export function plainRequestIdBase(commandId: string): string | null {
  return SAFE.test(commandId) && commandId.length <= MAX_BASE && commandId !== '.' && commandId !== '..'
    ? commandId
    : null;
}

/** The encoded base of an identity (the hash tells identities apart). */
export function hashedRequestIdBase(identity: CommandIdentity): string {
  const hash = createHash('sha256')
    .update(`${identity.source}\u0000${identity.commandType}\u0000${identity.commandId}`)
    .digest('hex')
    .slice(0, 16);
  return `${identity.commandId.replace(/[^A-Za-z0-9_.-]/g, '_').slice(0, MAX_BASE - 17)}-${hash}`;
}

/** The base a new command asks for first: its id unchanged when it fits, else the encoded one. */
export function preferredRequestIdBase(identity: CommandIdentity): string {
  return plainRequestIdBase(identity.commandId) ?? hashedRequestIdBase(identity);
}

/** The id of write attempt `n` (1-based): `<base>.a<n>`. */
export function writeRequestId(base: string, attempt: number): string {
  return `${base}.a${attempt}`;
}

/** The id of the `k`-th read made around write attempt `n`: `<base>.a<n>.r<k>`. */
export function readRequestId(base: string, attempt: number, read: number): string {
  return `${base}.a${attempt}.r${read}`;
}
