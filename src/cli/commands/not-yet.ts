import { UsageError } from '../process.js';

/** A command whose work lands in a later issue says so plainly (exit 2). */
export function notYet(command: string, issue: number): never {
  throw new UsageError(`\`${command}\` is not available yet (tracked in issue #${issue})`);
}
