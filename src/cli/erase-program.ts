import type { Command } from 'commander';
import type { EraseCliOptions } from './commands/erase.js';

/** `rentbridge erase` (its module is loaded only when it runs; docs/privacy.md). */
export function registerErase(program: Command): void {
  program
    .command('erase')
    .description(
      'erase one person on request: every row about the e-mail, its customer and enrollments, tombstones on partner.*, a receipt (exit 0; 2: bad usage)',
    )
    .option('--email <address>', "the person's e-mail address (required)")
    .option('--dry-run', 'change nothing; print the same receipt')
    .option('--note <text>', 'why (a ticket number), kept in the audit entry')
    .option('--format <format>', 'table | json', 'table')
    .option('--actor <name>', 'your name, kept beside the operating-system user in the audit')
    .action(async (opts: EraseCliOptions) => (await import('./commands/erase.js')).erase(opts));
}
