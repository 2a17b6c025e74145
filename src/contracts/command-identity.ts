import type { CommandKind } from './outcomes.js';

/**
 * A command is its identity: source + command type + command id (issue 35). A PMS numbers its
 * decisions and its payments apart (decision #42 and payment #42 are two things), and two PMS
 * sources number theirs apart too, so the command id alone names nothing. The guard's row, its
 * lock, its attempts, its outcome, its dead letter and every ops filter are keyed by all three.
 *
 * The source:
 * - a command that arrived as a PMS webhook (`POST /webhooks/pms/:source`): that PMS source
 *   (the receiver sets the CloudEvent `source` to `/webhooks/pms/<source>`);
 * - a command produced straight onto a `commands.*` topic: its CloudEvent `source` attribute as
 *   it is (a back-office producer keeps it stable: it is part of every command's identity);
 * - a follow-up command rentbridge produces (a registration's enrollment): its cause's source;
 * - a guard row written before identities existed whose source could not be recovered:
 *   UNKNOWN_SOURCE, adopted by the first command of the same type, id and content.
 */
export interface CommandIdentity {
  source: string;
  commandType: CommandKind;
  commandId: string;
}

/** The source of guard rows and dead letters from before identities whose source is not known. */
export const UNKNOWN_SOURCE = '';

const PMS_WEBHOOK_SOURCE = /^\/webhooks\/pms\/([^/]+)$/;

/** The identity's source of a command whose CloudEvent `source` attribute is `ceSource`. */
export function commandSourceOf(ceSource: string): string {
  const pms = PMS_WEBHOOK_SOURCE.exec(ceSource);
  return pms ? pms[1]! : ceSource;
}

/** The CloudEvent `source` of a command from PMS source `source` (what the receiver writes). */
export function pmsCloudEventSource(source: string): string {
  return `/webhooks/pms/${source}`;
}

/**
 * Any text as one printable line: controls, quotes, backslashes and invisible or direction-changing
 * characters escaped (JSON-style), so an id shows as what it is in the CLI, the console and logs.
 * Plain ids come back unchanged.
 */
export function escapeId(text: string): string {
  // eslint-disable-next-line no-control-regex -- these are exactly what must be escaped
  return text.replace(/[\u0000-\u001f\u007f-\u009f"\\\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]/g, (c) =>
    c === '"' ? '\\"' : c === '\\' ? '\\\\' : `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

/** One line naming an identity: `acme rental_payment "42"`. */
export function describeIdentity(identity: CommandIdentity): string {
  const source = identity.source === UNKNOWN_SOURCE ? '(unknown source)' : escapeId(identity.source);
  return `${source} ${identity.commandType} "${escapeId(identity.commandId)}"`;
}
