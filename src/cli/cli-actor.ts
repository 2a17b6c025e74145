import { hostname, userInfo } from 'node:os';

/**
 * The audit's actor of a CLI command acting on the database directly: `cli:<user>@<host>` from
 * the operating system (the process's real user, not $USER, which anyone may set or leave unset).
 * `--actor` no longer replaces it: a name given there is kept beside it, `cli:ana@ops-1 (as Ana)`.
 */
export function cliActor(claimed?: string): string {
  let user: string;
  try {
    user = userInfo().username;
  } catch {
    // No passwd entry for this uid (some containers): the uid itself still says who.
    user = `uid${process.getuid?.() ?? 'unknown'}`;
  }
  const actor = `cli:${user}@${hostname()}`;
  const name = claimed?.trim().slice(0, 200);
  return name ? `${actor} (as ${name})` : actor;
}
