import { Command, CommanderError, InvalidArgumentError } from 'commander';
import { rentbridgeVersion } from '../version.js';
import { registerCallbacks } from './callbacks-program.js';
import { registerReconcile } from './reconcile-program.js';
import { registerErase } from './erase-program.js';
import { registerOpsAccess } from './ops-access-program.js';
import { addDlqCommands } from './commands/dlq-options.js';
import type { ProbeCliOptions } from './commands/probe.js';
import { EXIT_USAGE, loadConfigOrExit, UsageError } from './process.js';
import { unreachableLine, unreachableServer } from './server-unreachable.js';
import { ID_KINDS, type IdKind } from '../event-trace/trace-repository.js';
import { commandContracts } from '../contracts/command-contracts.js';

const CONSUMER_NAMES = commandContracts().map((c) => c.name);
const COMMAND_KINDS = commandContracts().map((c) => c.kind);

/**
 * `rentbridge <command>`: the public CLI (docs/cli.md). Each command's module is loaded only
 * when it runs, so `--help` and the sandbox start without a database or Kafka.
 */

function integer(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new InvalidArgumentError('must be a port number');
  return n;
}

/** Commands that run until a signal: kafkajs's connection tries stay at error level there. */
const ROLE_COMMANDS = new Set(['start', 'receiver', 'relay', 'poller', 'consumer']);

/** The long-running roles: `start` (all of them), `receiver`, `relay`, `poller`, `consumer <name>`. */
function addRoleCommands(program: Command): void {
  program
    .command('start')
    .description(
      'run every role in one process against PARTNER_API_URL (required); with --demo, the embedded sandbox, a demo PMS and a demo ops token instead (what `npm start` runs); embedded PostgreSQL and a local Kafka when none is configured or found',
    )
    .option(
      '--demo',
      'the demo: the embedded Partner API sandbox with demo data, a demo PMS and the demo ops token (never for production; PARTNER_API_URL must be unset)',
    )
    .option(
      '--fresh',
      'wipe the data of the embedded PostgreSQL and local Kafka it starts (not of servers found running)',
    )
    .action(async (opts: { demo?: boolean; fresh?: boolean }) =>
      (await import('./commands/start.js')).start(opts),
    );

  program
    .command('receiver')
    .description('run the webhook receiver (and ops API, /metrics, health) on HTTP_PORT')
    .action(async () => (await import('./commands/receiver.js')).receiver());

  program
    .command('relay')
    .description('publish outbox rows to Kafka')
    .action(async () => (await import('./commands/relay.js')).relay());

  program
    .command('poller')
    .description('poll the Partner API continuously, the fallback for missed webhooks')
    .action(async () => (await import('./commands/poller.js')).poller());

  program
    .command('consumer')
    .description(`run a consumer: ${[...CONSUMER_NAMES, 'dead-letters'].join(' | ')}`)
    .argument('<name>', `${CONSUMER_NAMES.join(', ')} or dead-letters`)
    .action(async (name: string) => (await import('./commands/consumer.js')).consumer(name));
}

/** One-off commands: `probe`, `sandbox`, `migrate`, `topics`, `poll --once`, `resync`, `trace`. */
function addToolCommands(program: Command): void {
  program
    .command('probe')
    .description(
      "check the Partner API's answers against rentbridge's assumptions (read-only unless --write)",
    )
    .option(
      '--write',
      'also decide one application and report one payment (PARTNER_ENVIRONMENT=sandbox only)',
    )
    .option('--application <id>', 'with --write: an application the probe may decide')
    .option('--decision <approve|decline>', 'with --write: the decision to make', 'approve')
    .option('--enrollment <id>', 'with --write: an enrollment the probe may report a payment to')
    .option('--amount-cents <n>', 'with --write: the payment to report', '100')
    .option('--out <file>', 'where the JSON result is written', 'probe-result.json')
    .action(async (opts: ProbeCliOptions) => (await import('./commands/probe.js')).probe(opts));

  program
    .command('sandbox')
    .description('run the Partner API sandbox (in memory, no other configuration needed)')
    .option('-p, --port <port>', 'port to listen on', integer, 4010)
    .option('--seed <dataset>', 'load a data set at start: demo')
    .option('--host <address>', 'interface to listen on (0.0.0.0 in a container)', '127.0.0.1')
    .action(async (opts: { port: number; seed?: string; host: string }) =>
      (await import('./commands/sandbox.js')).sandbox(opts),
    );

  program
    .command('migrate')
    .description('apply pending database migrations (safe to re-run and to run concurrently)')
    .action(async () => (await import('./commands/migrate.js')).migrateCommand());

  program
    .command('topics')
    .description(
      "each topic's settings beside what rentbridge wants (a dry run); --apply creates and alters them in place",
    )
    .option('--apply', 'create missing topics and alter existing ones in place (messages kept)')
    .action(async (opts: { apply?: boolean }) => (await import('./commands/topics.js')).topics(opts));

  program
    .command('poll')
    .description('one poller pass, then exit')
    .requiredOption('--once', 'run one pass and exit (required)')
    .option('-r, --resource <resource>', 'poll only this resource (e.g. applications)')
    .action(async (opts: { resource?: string }) => (await import('./commands/poll.js')).pollOnce(opts));

  program
    .command('resync')
    .description(
      'republish the current state of every record on partner.<resource> (poll lane of the budget; resumable)',
    )
    .option('-r, --resource <resource>', 'only this resource (e.g. applications)')
    .option('--restart', 'start from the first page, not where a stopped resync left off')
    .action(async (opts: { resource?: string; restart?: boolean }) =>
      (await import('./commands/resync.js')).resyncCommand(opts),
    );

  program
    .command('trace')
    .description(
      'the life of one event from any of its ids (webhook, CloudEvent, command, request, record, dead letter)',
    )
    .argument('<id>')
    .option('--json', 'print JSON instead of a table')
    .option('--source <source>', 'only commands of this source (when several commands share the id)')
    .option('--type <type>', `only commands of this type (${COMMAND_KINDS.join(', ')})`)
    .option(
      '--as <kind>',
      `follow the id only as one kind, when it matches several: ${ID_KINDS.join(' | ')}`,
      (value: string) => {
        if (!(ID_KINDS as readonly string[]).includes(value))
          throw new InvalidArgumentError(`must be one of ${ID_KINDS.join(', ')}`);
        return value as IdKind;
      },
    )
    .option('--reveal <reason>', 'show personal values whole (masked otherwise); the reason is audited')
    .action(
      async (
        id: string,
        opts: { json?: boolean; source?: string; type?: string; as?: IdKind; reveal?: string },
      ) => (await import('./commands/trace.js')).trace(id, opts),
    );
}

export function buildProgram(): Command {
  const program = new Command('rentbridge')
    .description(
      'Bridges the Partner API and Kafka: webhooks and polling in, guarded writes out, dead letters for ops.',
    )
    .version(rentbridgeVersion(), '-V, --version', 'print the version of rentbridge')
    .addHelpText(
      'after',
      '\nConfiguration is by environment variables: docs/configuration.md lists each with its default (the README\'s "Configure it" the most set).\nREADME.md and docs/ in the project (or its repository) say more; `rentbridge <command> --help` for one command.',
    )
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride()
    // Configuration is checked before any command but the self-contained sandbox runs: a bad
    // value stops the process at once (exit 2), not halfway through start-up.
    .hook('preAction', async (_program, action) => {
      if (action.name() !== 'sandbox') loadConfigOrExit();
      // A one-off command says in one line that Kafka does not answer (src/cli/server-unreachable.ts).
      const role =
        ROLE_COMMANDS.has(action.name()) ||
        (action.name() === 'run' && action.parent?.name() === 'callbacks');
      if (!role) (await import('../kafka/kafka-log-level.js')).logConnectionFailuresAtDebug();
      // OpenTelemetry only when OTEL_EXPORTER_OTLP_ENDPOINT is set: nothing is loaded otherwise.
      if (process.env.OTEL_EXPORTER_OTLP_ENDPOINT || process.env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) {
        await (await import('../telemetry-sdk.js')).startTelemetry(action.name());
      }
    });

  addRoleCommands(program);
  addToolCommands(program);
  addDlqCommands(program, async (invocation) => (await import('./commands/dlq.js')).dlq(invocation));
  // Outcome callbacks to PMS sources: the role process and what ops do (src/cli/commands/callbacks.ts).
  registerCallbacks(program);
  // Reconciliation against the platform's records (src/reconcile/).
  registerReconcile(program);
  // Erasure of one person on request (src/erasure/, docs/privacy.md).
  registerErase(program);
  // Personal ops tokens and the audit chain (docs/ops-access.md).
  registerOpsAccess(program);

  return program;
}

export async function main(argv: string[]): Promise<void> {
  try {
    await buildProgram().parseAsync(argv);
  } catch (error) {
    if (error instanceof CommanderError) {
      const ok =
        error.code === 'commander.helpDisplayed' ||
        error.code === 'commander.version' ||
        error.code === 'commander.help';
      process.exit(ok ? 0 : EXIT_USAGE);
    }
    if (error instanceof UsageError) {
      console.error(`rentbridge: ${error.message}`);
      process.exit(EXIT_USAGE);
    }
    const e = error as NodeJS.ErrnoException & { port?: number };
    if (e.code === 'EADDRINUSE') {
      console.error(
        `rentbridge: port ${e.port ?? ''} is already in use: choose another (HTTP_PORT, SANDBOX_PORT, --port)`,
      );
      process.exit(EXIT_USAGE);
    }
    // PostgreSQL or Kafka not answering: one line saying which, where and why there (exit 2).
    const config = loadConfigOrExit();
    const unreachable = unreachableServer(error, config);
    if (unreachable) {
      console.error(`rentbridge: ${unreachableLine(unreachable, config)}`);
      process.exit(EXIT_USAGE);
    }
    console.error('rentbridge: fatal error:', error);
    process.exit(1);
  }
}

await main(process.argv);
