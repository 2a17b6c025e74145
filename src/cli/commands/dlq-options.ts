import { Option, type Command } from 'commander';
import { DEAD_LETTER_STATES } from '../../dead-letters/dead-letter-filters.js';
import { DEAD_LETTER_REASONS } from '../../dead-letters/dead-letter-headers.js';
import { COMMAND_KINDS } from '../../contracts/outcomes.js';

/**
 * `rentbridge dlq list|show|redrive|discard`: every option of the four commands, declared once and
 * parsed once, by main.ts's program as by `runDlq` (src/cli/commands/dlq.ts). The action gets the
 * parsed options; only then is the module that needs a database loaded.
 */

/** Above this many letters, a redrive asks first (or needs --yes) and shows a progress bar. */
export const CONFIRM_ABOVE = 10;

export type DlqSubcommand = 'list' | 'show' | 'redrive' | 'discard';
export const DLQ_SUBCOMMANDS: readonly DlqSubcommand[] = ['list', 'show', 'redrive', 'discard'];

/** The filter options, named as the dead-letter filter schema names its fields. */
export interface FilterFlags {
  topic?: string;
  reason?: string;
  code?: string;
  key?: string;
  commandId?: string;
  source?: string;
  commandType?: string;
  requestId?: string;
  state?: string;
  since?: string;
  until?: string;
  timeField?: string;
  search?: string;
  limit?: string;
}

export interface DlqFlags extends FilterFlags {
  json?: boolean;
  where?: boolean;
  dryRun?: boolean;
  yes?: boolean;
  correctFile?: string;
  force?: boolean;
  note?: string;
  actor?: string;
  /** Why personal values are shown whole (decision 052): audited as a reveal. */
  reveal?: string;
}

/** One parsed `dlq` command line: the subcommand, its arguments (ids) and its options. */
export interface DlqInvocation {
  sub: DlqSubcommand;
  args: string[];
  flags: DlqFlags;
}

function addFilterOptions(cmd: Command): Command {
  return cmd
    .option('--topic <topic>', 'DLQ or original topic (with or without the prefix)')
    .addOption(new Option('--reason <reason>', 'failure reason').choices(DEAD_LETTER_REASONS))
    .option('--code <code>', 'error code (e.g. invalid_state_transition)')
    .option('--key <key>', 'message key (the target record id)')
    .option(
      '--command-id <id>',
      'command id (decision_id / payment_id / registration_id / enrollment_request_id)',
    )
    .option('--source <source>', "the command's source (a PMS source, or a producer's CloudEvent source)")
    .addOption(new Option('--command-type <type>', "the command's type").choices(COMMAND_KINDS))
    .option('--request-id <id>', 'a Partner API request id of one of the attempts')
    .addOption(
      new Option('--state <state>', 'letter state').choices([...DEAD_LETTER_STATES, 'all']).default('open'),
    )
    .option('--since <iso>', 'from this time (inclusive)')
    .option('--until <iso>', 'up to this time (inclusive)')
    .addOption(
      new Option('--time-field <field>', 'time that --since/--until apply to')
        .choices(['indexed', 'last_failure'])
        .default('indexed'),
    )
    .option('--search <text>', 'text in the value or the error message (case-insensitive)')
    .option('--limit <n>', 'at most this many letters', '100');
}

function redriveOptions(cmd: Command): Command {
  return addFilterOptions(cmd)
    .option('--where', 'redrive every letter matching the filter options instead of ids')
    .option('--dry-run', 'say what would happen to each letter, change nothing')
    .option('-y, --yes', `do not ask before redriving more than ${CONFIRM_ABOVE} letters`)
    .option('--correct-file <path>', 'JSON file: the corrected command (or whole CloudEvent), one id only')
    .option('--force', 'redrive a letter that is no longer open')
    .option('--note <text>', 'why (kept in the audit log; --reason is the failure-reason filter)')
    .option('--actor <name>', 'a name recorded beside cli:<os user>@<host> in the audit log')
    .option('--json', 'print JSON');
}

/** Adds `dlq` and its four commands to `program`; each parsed command line goes to `run`. */
export function addDlqCommands(program: Command, run: (invocation: DlqInvocation) => Promise<void>): Command {
  const dlq = program.command('dlq').description('list, inspect, redrive and discard dead letters');
  const action =
    (sub: DlqSubcommand) =>
    (...params: unknown[]) => {
      // commander passes the arguments, then the options, then the command itself.
      const cmd = params[params.length - 1] as Command;
      return run({ sub, args: cmd.args, flags: cmd.opts<DlqFlags>() });
    };
  addFilterOptions(dlq.command('list').description('list dead letters'))
    .option('--json', 'print JSON')
    .option('--reveal <reason>', 'search by a personal value (an e-mail, a phone): audited as a reveal')
    .action(action('list'));
  dlq
    .command('show')
    .description('show one dead letter')
    .argument('<id>')
    .option('--json', 'print JSON')
    .option('--reveal <reason>', 'show personal values whole (masked otherwise); the reason is audited')
    .action(action('show'));
  redriveOptions(dlq.command('redrive').description('republish dead letters to their original topic'))
    .argument('[ids...]')
    .action(action('redrive'));
  dlq
    .command('discard')
    .description('close dead letters without redriving them')
    .argument('<ids...>')
    .option('--note <text>', 'why (required, kept in the audit log)')
    // One word for one meaning: --reason is the failure-reason filter; the audit text is --note.
    .option('--reason <text>', 'old name of --note, still accepted')
    .option('--actor <name>', 'a name recorded beside cli:<os user>@<host> in the audit log')
    .action(action('discard'));
  return dlq;
}
