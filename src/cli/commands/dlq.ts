import { readFile } from 'node:fs/promises';
import { createInterface } from 'node:readline/promises';
import cliProgress from 'cli-progress';
import { Command, CommanderError, Option } from 'commander';
import type { Producer } from 'kafkajs';
import type { Db } from '../../db/prisma.js';
import { escapeId } from '../../events/command-identity.js';
import { COMMAND_KINDS } from '../../events/outcomes.js';
import { deadLetterTarget, listAudit } from '../../dead-letters/audit-repository.js';
import {
  DEAD_LETTER_STATES,
  deadLetterFiltersSchema,
  describeIssues,
  type DeadLetterFilters,
} from '../../dead-letters/dead-letter-filters.js';
import {
  DEAD_LETTER_REASONS,
  DLQ_HEADER,
  fromDeadLetterHeaders,
} from '../../dead-letters/dead-letter-headers.js';
import {
  countDeadLetters,
  findDeadLetterIds,
  getDeadLetter,
  searchDeadLetters,
  type DeadLetter,
  type DeadLetterCounts,
} from '../../dead-letters/dead-letter-repository.js';
import {
  discardDeadLetter,
  letterGuardState,
  redriveDeadLetter,
  type RedriveOutcome,
} from '../../dead-letters/redrive.js';
import { AppError } from '../../errors.js';
import { logicalTopic } from '../../kafka/topics.js';
import type { Logger } from '../../logger.js';
import { createCompositionRoot } from '../../app/composition-root.js';
import { loadConfigOrExit, UsageError } from '../process.js';

/**
 * `rentbridge dlq list|show|redrive|discard` (README: "Dead letters"). main.ts passes the
 * arguments after the subcommand; they are parsed here so that every option lives in one place.
 */

/** Above this many letters, a redrive asks first (or needs --yes) and shows a progress bar. */
export const CONFIRM_ABOVE = 10;

export interface DlqDeps {
  db: Db;
  topicPrefix: string;
  logger: Logger;
  /** Connected on first use: only `redrive` needs Kafka. */
  producer(): Promise<Producer>;
  out(text: string): void;
  isTTY: boolean;
  confirm(question: string): Promise<boolean>;
  env: NodeJS.ProcessEnv;
}

interface FilterFlags {
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

function addFilterOptions(cmd: Command, defaultState: string): Command {
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
      new Option('--state <state>', 'letter state')
        .choices([...DEAD_LETTER_STATES, 'all'])
        .default(defaultState),
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

function toFilters(flags: FilterFlags): DeadLetterFilters {
  const parsed = deadLetterFiltersSchema.safeParse({
    topic: flags.topic,
    reason: flags.reason,
    code: flags.code,
    key: flags.key,
    commandId: flags.commandId,
    source: flags.source,
    commandType: flags.commandType,
    requestId: flags.requestId,
    state: flags.state,
    since: flags.since,
    until: flags.until,
    timeField: flags.timeField,
    search: flags.search,
    limit: flags.limit,
  });
  if (!parsed.success) throw new UsageError(describeIssues(parsed.error));
  return parsed.data;
}

function actorOf(flags: { actor?: string }, env: NodeJS.ProcessEnv): string {
  return flags.actor ?? env.USER ?? env.LOGNAME ?? 'unknown';
}

function parseIds(values: string[]): number[] {
  return values.map((v) => {
    const n = Number(v);
    if (!Number.isSafeInteger(n) || n <= 0) throw new UsageError(`"${v}" is not a dead-letter id`);
    return n;
  });
}

function cell(text: string | number | null | undefined, width: number): string {
  const s = text == null || text === '' ? '-' : String(text);
  return s.length > width ? `${s.slice(0, width - 1)}…` : s.padEnd(width);
}

function formatCounts(counts: DeadLetterCounts): string {
  const list = (m: Record<string, number>) =>
    Object.entries(m)
      .sort((a, b) => b[1] - a[1])
      .map(([k, n]) => `${k} ${n}`)
      .join(', ') || 'none';
  return `${counts.total} matching · by reason: ${list(counts.byReason)} · by code: ${list(counts.byCode)}`;
}

export function formatTable(letters: DeadLetter[], prefix: string): string {
  const header = `${cell('ID', 7)} ${cell('STATE', 14)} ${cell('REASON', 21)} ${cell('CODE', 24)} ${cell('TOPIC', 32)} ${cell('KEY', 16)} ${cell('SOURCE', 12)} ${cell('COMMAND', 24)} LAST FAILURE`;
  // Ids are the PMS's own text: escaped, so a space, a quote or a direction mark shows as itself.
  const id = (v: string | null) => (v == null ? null : escapeId(v));
  const rows = letters.map(
    (l) =>
      `${cell(l.id, 7)} ${cell(l.state, 14)} ${cell(l.reason, 21)} ${cell(l.errorCode, 24)} ${cell(
        logicalTopic(prefix, l.originalTopic ?? l.dlqTopic),
        32,
      )} ${cell(id(l.key), 16)} ${cell(id(l.commandSource), 12)} ${cell(id(l.commandId), 24)} ${l.lastFailureAt?.toISOString() ?? '-'}`,
  );
  return [header, ...rows].join('\n');
}

function prettyValue(value: string): string {
  try {
    return JSON.stringify(JSON.parse(value), null, 2);
  } catch {
    return value;
  }
}

/** `--help` was printed: the command ends there, successfully. */
class HelpShown extends Error {}

function parseWith(cmd: Command, args: string[]): Command {
  cmd.exitOverride().configureOutput({ writeErr: () => undefined });
  try {
    cmd.parse(args, { from: 'user' });
  } catch (error) {
    if (error instanceof CommanderError && error.code === 'commander.helpDisplayed') throw new HelpShown();
    if (error instanceof CommanderError) throw new UsageError(error.message.replace(/^error: /, ''));
    throw error;
  }
  return cmd;
}

async function list(args: string[], deps: DlqDeps): Promise<number> {
  const cmd = parseWith(
    addFilterOptions(new Command('dlq list'), 'open').option('--json', 'print JSON'),
    args,
  );
  const flags = cmd.opts<FilterFlags & { json?: boolean }>();
  const filters = toFilters(flags);
  const [items, counts] = await Promise.all([
    searchDeadLetters(deps.db, filters, deps.topicPrefix),
    countDeadLetters(deps.db, filters, deps.topicPrefix),
  ]);
  if (flags.json) {
    deps.out(JSON.stringify({ items, counts }, null, 2));
  } else {
    deps.out(items.length > 0 ? formatTable(items, deps.topicPrefix) : 'no dead letters match');
    deps.out(`${formatCounts(counts)}${items.length < counts.total ? ` (showing ${items.length})` : ''}`);
  }
  return 0;
}

/**
 * What the Partner API said beyond its message (the `dlq-error` header, the outcome's `error`):
 * the processor's reason of a declined card, the validation errors, the details, the ids of a
 * server error, and any extra field, so ops can tell a tenant why without reading JSON.
 */
export function partnerErrorLines(json: string | undefined): string[] {
  const e = fromDeadLetterHeaders({ [DLQ_HEADER.error]: json }).error;
  if (!e) return [];
  const lines: string[] = [];
  if (e.request_id) lines.push(`  request id    ${e.request_id}`);
  if (e.code_missing) lines.push('  code          (none in the answer: read as bad_request)');
  if (e.processor_code || e.processor_decline_code)
    lines.push(`  processor     ${e.processor_code ?? '-'}, decline code ${e.processor_decline_code ?? '-'}`);
  for (const error of e.errors ?? []) lines.push(`  invalid       ${error}`);
  for (const [field, reason] of Object.entries(e.details ?? {}))
    lines.push(`  detail        ${field}: ${typeof reason === 'string' ? reason : JSON.stringify(reason)}`);
  if (e.error_id || e.error_signature)
    lines.push(`  error id      ${e.error_id ?? '-'}  signature ${e.error_signature ?? '-'}`);
  if (e.extra) lines.push(`  extra         ${JSON.stringify(e.extra)}`);
  return lines;
}

async function show(args: string[], deps: DlqDeps): Promise<number> {
  const cmd = parseWith(new Command('dlq show').argument('<id>').option('--json', 'print JSON'), args);
  const [id] = parseIds(cmd.args.slice(0, 1));
  const letter = await getDeadLetter(deps.db, id!);
  if (!letter) {
    console.error(`rentbridge: no dead letter ${id}`);
    return 1;
  }
  const guard = await letterGuardState(deps.db, letter, deps.topicPrefix);
  const audit = await listAudit(deps.db, { target: deadLetterTarget(letter.id) });
  if (cmd.opts<{ json?: boolean }>().json) {
    deps.out(JSON.stringify({ letter, guard, audit }, null, 2));
    return 0;
  }
  const lines = [
    `Dead letter ${letter.id} — ${letter.state}${letter.resolvedBy ? ` by ${letter.resolvedBy} (${letter.resolution ?? ''})` : ''}`,
    `  reason        ${letter.reason ?? '-'}  ${letter.errorCode ?? ''} ${letter.errorStatus ?? ''}`.trimEnd(),
    `  error         ${letter.errorMessage ?? '-'}`,
    ...partnerErrorLines(letter.headers[DLQ_HEADER.error]),
    `  original      ${letter.originalTopic ?? '-'} [${letter.originalPartition ?? '-'}] @ ${letter.originalOffset ?? '-'}  key ${letter.key ?? '-'}`,
    `  dead letter   ${letter.dlqTopic} [${letter.partition}] @ ${letter.offset}, indexed ${letter.indexedAt.toISOString()}`,
    `  command       ${letter.commandId == null ? '-' : `"${escapeId(letter.commandId)}"`}  source ${letter.commandSource == null ? '-' : `"${escapeId(letter.commandSource)}"`}  type ${letter.commandType ?? '-'}  attempts ${letter.attempts ?? '-'}  consumer group ${letter.consumerGroup ?? '-'}`,
    `  failures      first ${letter.firstFailureAt?.toISOString() ?? '-'}, last ${letter.lastFailureAt?.toISOString() ?? '-'}`,
    `  partner request ids  ${letter.partnerRequestIds.join(', ') || '-'}`,
    '',
    'Guard state',
    guard
      ? `  ${guard.state} (attempts ${guard.attempts}, updated ${guard.updatedAt.toISOString()})${guard.lastError ? `  last error ${JSON.stringify(guard.lastError)}` : ''}`
      : '  no row for this command (never tried, or reset by a redrive)',
    ...(guard?.history.length
      ? [
          '  attempts:',
          ...guard.history.map(
            (a) =>
              `    #${a.attempt} ${a.kind} ${a.startedAt.toISOString()} ${a.result ?? ''} ${a.status ?? ''} ${a.code ?? ''} request ${a.requestId}${a.message ? ` — ${a.message}` : ''}`,
          ),
        ]
      : []),
    '',
    'Headers',
    ...Object.entries(letter.headers).map(([k, v]) => `  ${k}: ${v}`),
    '',
    'Value',
    prettyValue(letter.value),
    ...(letter.correctedValue ? ['', 'Corrected value', prettyValue(letter.correctedValue)] : []),
    ...(audit.length
      ? [
          '',
          'Audit',
          ...audit.map(
            (a) => `  ${a.at.toISOString()} ${a.actor} ${a.action}${a.reason ? ` — ${a.reason}` : ''}`,
          ),
        ]
      : []),
  ];
  deps.out(lines.join('\n'));
  return 0;
}

async function redrive(args: string[], deps: DlqDeps): Promise<number> {
  const cmd = parseWith(
    addFilterOptions(new Command('dlq redrive').argument('[ids...]'), 'open')
      .option('--where', 'redrive every letter matching the filter options instead of ids')
      .option('--dry-run', 'say what would happen to each letter, change nothing')
      .option('-y, --yes', `do not ask before redriving more than ${CONFIRM_ABOVE} letters`)
      .option('--correct-file <path>', 'JSON file: the corrected command (or whole CloudEvent), one id only')
      .option('--force', 'redrive a letter that is no longer open')
      .option('--note <text>', 'why (kept in the audit log; --reason is the filter)')
      .option('--actor <name>', 'who (default $USER)')
      .option('--json', 'print JSON'),
    args,
  );
  const flags = cmd.opts<
    FilterFlags & {
      where?: boolean;
      dryRun?: boolean;
      yes?: boolean;
      correctFile?: string;
      force?: boolean;
      note?: string;
      actor?: string;
      json?: boolean;
    }
  >();
  let ids: number[];
  if (flags.where) {
    if (cmd.args.length > 0) throw new UsageError('give either ids or --where, not both');
    ids = await findDeadLetterIds(deps.db, toFilters(flags), deps.topicPrefix);
  } else {
    if (cmd.args.length === 0) throw new UsageError('give dead-letter ids, or --where with filters');
    ids = parseIds(cmd.args);
  }
  let correction: unknown;
  if (flags.correctFile) {
    if (ids.length !== 1) throw new UsageError('--correct-file applies to exactly one dead letter');
    try {
      correction = JSON.parse(await readFile(flags.correctFile, 'utf8')) as unknown;
    } catch (error) {
      throw new UsageError(`cannot read ${flags.correctFile} as JSON: ${(error as Error).message}`);
    }
  }
  if (ids.length === 0) {
    deps.out('no dead letters match');
    return 0;
  }
  if (ids.length > CONFIRM_ABOVE && !flags.yes && !flags.dryRun) {
    if (!deps.isTTY)
      throw new UsageError(`refusing to redrive ${ids.length} letters without --yes (not a terminal)`);
    if (!(await deps.confirm(`Redrive ${ids.length} dead letters? [y/N] `))) {
      deps.out('nothing redriven');
      return 1;
    }
  }

  const producer = flags.dryRun ? null : await deps.producer();
  const redriveDeps = {
    db: deps.db,
    // A dry run never sends: a producer that throws proves it.
    producer:
      producer ??
      ({
        send: () => Promise.reject(new Error('dry run sends nothing')),
      } as unknown as Producer),
    topicPrefix: deps.topicPrefix,
    logger: deps.logger,
  };
  const bar =
    ids.length > CONFIRM_ABOVE && !flags.json
      ? new cliProgress.SingleBar(
          { stream: process.stderr, clearOnComplete: true },
          cliProgress.Presets.shades_classic,
        )
      : null;
  bar?.start(ids.length, 0);
  const outcomes: RedriveOutcome[] = [];
  for (const id of ids) {
    outcomes.push(
      await redriveDeadLetter(redriveDeps, id, {
        actor: actorOf(flags, deps.env),
        reason: flags.note ?? null,
        dryRun: flags.dryRun ?? false,
        force: flags.force ?? false,
        ...(correction !== undefined ? { correction } : {}),
      }),
    );
    bar?.increment();
  }
  bar?.stop();

  if (flags.json) {
    deps.out(JSON.stringify({ dryRun: flags.dryRun ?? false, outcomes }, null, 2));
  } else {
    const verb = flags.dryRun ? 'would ' : '';
    for (const o of outcomes) {
      const label = {
        send: `${verb}send`,
        close_applied: `${verb}close as applied`,
        skip: `${verb}skip`,
        invalid: 'invalid',
        not_found: 'not found',
      }[o.action];
      deps.out(`#${o.id} ${label}: ${o.message}`);
    }
    const n = (a: RedriveOutcome['action']) => outcomes.filter((o) => o.action === a).length;
    // "1 would be sent" on a dry run, "1 sent" otherwise.
    const done = flags.dryRun ? 'would be ' : '';
    deps.out(
      `${flags.dryRun ? 'dry run: ' : ''}${n('send')} ${done}sent, ${n('close_applied')} ${done}closed as applied, ${n('skip')} ${done}skipped, ${n('invalid') + n('not_found')} failed`,
    );
  }
  return outcomes.some((o) => o.action === 'invalid' || o.action === 'not_found') ? 1 : 0;
}

async function discard(args: string[], deps: DlqDeps): Promise<number> {
  const cmd = parseWith(
    new Command('dlq discard')
      .argument('<ids...>')
      .option('--reason <text>', 'why (required, kept in the audit log)')
      .option('--actor <name>', 'who (default $USER)'),
    args,
  );
  const flags = cmd.opts<{ reason?: string; actor?: string }>();
  if (!flags.reason?.trim()) throw new UsageError('dlq discard needs --reason TEXT (kept in the audit log)');
  const ids = parseIds(cmd.args);
  let failed = false;
  for (const id of ids) {
    const o = await discardDeadLetter(deps, id, { actor: actorOf(flags, deps.env), reason: flags.reason });
    failed ||= o.action === 'not_found';
    deps.out(`#${id} ${o.action === 'discarded' ? 'discarded' : `${o.action}: ${o.message}`}`);
  }
  return failed ? 1 : 0;
}

/** Runs one `dlq` subcommand; returns the exit code. UsageError means exit 2. */
export async function runDlq(sub: string, args: string[], deps: DlqDeps): Promise<number> {
  try {
    switch (sub) {
      case 'list':
        return await list(args, deps);
      case 'show':
        return await show(args, deps);
      case 'redrive':
        return await redrive(args, deps);
      case 'discard':
        return await discard(args, deps);
      default:
        throw new UsageError(`unknown dlq command "${sub}": expected list, show, redrive or discard`);
    }
  } catch (error) {
    if (error instanceof HelpShown) return 0;
    if (error instanceof AppError && error.status === 400) throw new UsageError(error.message);
    throw error;
  }
}

export async function dlq(sub: string, args: string[]): Promise<void> {
  const runtime = createCompositionRoot(loadConfigOrExit());
  try {
    const code = await runDlq(sub, args, {
      db: runtime.db,
      topicPrefix: runtime.config.KAFKA_TOPIC_PREFIX,
      logger: runtime.logger,
      producer: () => runtime.producer.get(),
      out: (text) => process.stdout.write(`${text}\n`),
      isTTY: Boolean(process.stdin.isTTY && process.stdout.isTTY),
      async confirm(question) {
        const rl = createInterface({ input: process.stdin, output: process.stdout });
        try {
          return /^y(es)?$/i.test((await rl.question(question)).trim());
        } finally {
          rl.close();
        }
      },
      env: process.env,
    });
    process.exitCode = code;
  } finally {
    await runtime.close();
  }
}
