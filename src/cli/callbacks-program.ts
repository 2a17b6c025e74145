import type { Command } from 'commander';
import type { ListOptions } from './commands/callbacks.js';

/** `rentbridge callbacks …` (its module is loaded only when one of them runs). */
export function registerCallbacks(program: Command): void {
  const load = () => import('./commands/callbacks.js');
  const callbacks = program
    .command('callbacks')
    .description('outcome callbacks to PMS sources: run the role, see deliveries, redeliver dead letters');
  callbacks
    .command('run')
    .description('deliver outcome callbacks (PMS_CALLBACKS) until SIGTERM; /metrics and health on HTTP_PORT')
    .action(async () => (await load()).run());
  callbacks
    .command('status')
    .description("each source's endpoint (breaker, disabled) and queue")
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) => (await load()).status(opts));
  callbacks
    .command('list')
    .description('list callback deliveries (dead letters by default)')
    .option('--state <state>', 'pending | delivered | dead | all', 'dead')
    .option('--source <source>', 'only this PMS source')
    .option(
      '--command-id <id>',
      'only deliveries of commands with this id (with --source and --command-type: one command)',
    )
    .option('--command-type <type>', 'only this command type (application_decision, rental_payment, ...)')
    .option('--limit <n>', 'at most this many', '100')
    .option('--json', 'print JSON')
    .action(async (opts: ListOptions) => (await load()).list(opts));
  callbacks
    .command('show')
    .argument('<id>')
    .description('one delivery with its body and every attempt')
    .action(async (id: string) => (await load()).show(id));
  callbacks
    .command('redeliver')
    .argument('[ids...]')
    .description(
      'deliver dead callbacks again (same webhook-id, fresh retry span): ids, or --all [--source S]',
    )
    .option('--all', 'every dead delivery (of --source when given)')
    .option('--source <source>', 'only this PMS source')
    .option('--actor <name>', 'a name recorded beside cli:<os user>@<host> in the audit log')
    .option('--reason <text>', 'why (audit log)')
    .action(
      async (ids: string[], opts: { all?: boolean; source?: string; actor?: string; reason?: string }) =>
        (await load()).redeliverCommand(ids, opts),
    );
  callbacks
    .command('enable')
    .argument('<source>')
    .description('enable a source endpoint a 410 Gone disabled (configuring another URL also does)')
    .action(async (source: string) => (await load()).enable(source));
}
