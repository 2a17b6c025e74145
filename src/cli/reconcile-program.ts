import type { Command } from 'commander';
import type { ReconcileCliOptions } from './commands/reconcile.js';

/** `rentbridge reconcile` (its module is loaded only when it runs). */
export function registerReconcile(program: Command): void {
  program
    .command('reconcile')
    .description(
      "check each command finished in the window (and every unverified one) against the platform's records; settle parked commands from the evidence (exit 0: all confirmed, 1: drift found, 2: bad usage)",
    )
    .option(
      '--since <date>',
      'start of the window (ISO date or time, inclusive); default 24 hours before --until',
    )
    .option('--until <date>', 'end of the window (ISO date or time, exclusive); default now')
    .option(
      '--source <source>',
      'only the commands of this PMS source (read with its own key, if it has one)',
    )
    .option(
      '--type <type>',
      'only this command type: rental_payment | application_decision | customer_registration | enrollment',
    )
    .option('--format <format>', 'table | json | csv', 'table')
    .action(async (opts: ReconcileCliOptions) => (await import('./commands/reconcile.js')).reconcile(opts));
}
