import { readFile } from 'node:fs/promises';
import { cliActor } from '../cli-actor.js';
import { createInterface } from 'node:readline/promises';
import cliProgress from 'cli-progress';
import { Command, CommanderError } from 'commander';
import type { Producer } from 'kafkajs';
import { createCompositionRoot } from '../../app/composition-root.js';
import type { Db } from '../../db/prisma.js';
import { deadLetterFiltersSchema, parseFilters } from '../../dead-letters/dead-letter-filters.js';
import { DLQ_HEADER, fromDeadLetterHeaders } from '../../dead-letters/dead-letter-headers.js';
import { createDeadLetterService, type DeadLetterService } from '../../dead-letters/dead-letter-service.js';
import { AppError } from '../../errors.js';
import type { Logger } from '../../logger.js';
import { loadConfigOrExit, UsageError } from '../process.js';
import {
  formatCounts,
  formatDetail,
  formatRedrive,
  formatTable,
  partnerErrorDetailLines,
} from './dlq-format.js';
import { maskPersonal } from '../../personal-data.js';
import { auditCliReveal, requireRevealForSearch, revealReason } from '../cli-reveal.js';
import {
  addDlqCommands,
  CONFIRM_ABOVE,
  DLQ_SUBCOMMANDS,
  type DlqFlags,
  type DlqInvocation,
  type DlqSubcommand,
} from './dlq-options.js';

/**
 * `rentbridge dlq list|show|redrive|discard` (docs/runbook.md, "Dead letters and redrive"): the options parsed once
 * (src/cli/commands/dlq-options.ts), the work done by the dead-letter service, the output
 * formatted by dlq-format.ts.
 */

export { CONFIRM_ABOVE } from './dlq-options.js';
export { formatTable } from './dlq-format.js';

export interface DlqDeps {
  db: Db;
  topicPrefix: string;
  logger: Logger;
  /** Connected on first use: only a redrive that sends needs Kafka. */
  producer(): Promise<Producer>;
  out(text: string): void;
  isTTY: boolean;
  confirm(question: string): Promise<boolean>;
  env: NodeJS.ProcessEnv;
}

interface DlqContext extends DlqDeps {
  letters: DeadLetterService;
}

/** The Partner error lines of a `dlq-error` header's JSON, read as the service reads it. */
export function partnerErrorLines(json: string | undefined): string[] {
  return partnerErrorDetailLines(fromDeadLetterHeaders({ [DLQ_HEADER.error]: json }).error);
}

/** `cli:<user>@<host>` from the operating system; a --actor name is kept beside it (src/cli/cli-actor.ts). */
function actorOf(flags: DlqFlags): string {
  return cliActor(flags.actor);
}

function parseIds(values: string[]): number[] {
  return values.map((v) => {
    const n = Number(v);
    if (!Number.isSafeInteger(n) || n <= 0) throw new UsageError(`"${v}" is not a dead-letter id`);
    return n;
  });
}

const filtersOf = (flags: DlqFlags) => parseFilters(deadLetterFiltersSchema, { ...flags });

async function list({ flags }: DlqInvocation, ctx: DlqContext): Promise<number> {
  const filters = filtersOf(flags);
  const reason = revealReason(flags.reveal);
  const searched = requireRevealForSearch([filters.search, filters.key], reason);
  if (searched !== null && reason) await auditCliReveal(ctx.db, 'search', searched, reason);
  // A list is never revealed: its items are, one at a time (dlq show --reveal).
  const { items, counts } = maskPersonal(await ctx.letters.list(filters));
  if (flags.json) {
    ctx.out(JSON.stringify({ items, counts }, null, 2));
  } else {
    ctx.out(items.length > 0 ? formatTable(items, ctx.topicPrefix) : 'no dead letters match');
    ctx.out(`${formatCounts(counts)}${items.length < counts.total ? ` (showing ${items.length})` : ''}`);
  }
  return 0;
}

async function show({ args, flags }: DlqInvocation, ctx: DlqContext): Promise<number> {
  const [id] = parseIds(args.slice(0, 1));
  const reason = revealReason(flags.reveal);
  const found = await ctx.letters.show(id!);
  if (!found) {
    console.error(`rentbridge: no dead letter ${id}`);
    return 1;
  }
  if (reason) await auditCliReveal(ctx.db, 'dead_letter', id!, reason);
  const detail = reason ? found : maskPersonal(found);
  ctx.out(flags.json ? JSON.stringify(detail, null, 2) : formatDetail(detail));
  return 0;
}

/** The letters a redrive names: its ids, or every letter matching the filters with --where. */
async function redriveIds({ args, flags }: DlqInvocation, ctx: DlqContext): Promise<number[]> {
  if (flags.where) {
    if (args.length > 0) throw new UsageError('give either ids or --where, not both');
    return ctx.letters.matchingIds(filtersOf(flags));
  }
  if (args.length === 0) throw new UsageError('give dead-letter ids, or --where with filters');
  return parseIds(args);
}

async function readCorrection(path: string | undefined, ids: number[]): Promise<unknown> {
  if (!path) return undefined;
  if (ids.length !== 1) throw new UsageError('--correct-file applies to exactly one dead letter');
  try {
    return JSON.parse(await readFile(path, 'utf8')) as unknown;
  } catch (error) {
    throw new UsageError(`cannot read ${path} as JSON: ${(error as Error).message}`);
  }
}

/** Many letters: asked on a terminal, refused without --yes elsewhere. False: the user said no. */
async function confirmMany(ids: number[], flags: DlqFlags, ctx: DlqContext): Promise<boolean> {
  if (ids.length <= CONFIRM_ABOVE || flags.yes || flags.dryRun) return true;
  if (!ctx.isTTY)
    throw new UsageError(`refusing to redrive ${ids.length} letters without --yes (not a terminal)`);
  return ctx.confirm(`Redrive ${ids.length} dead letters? [y/N] `);
}

async function redrive(invocation: DlqInvocation, ctx: DlqContext): Promise<number> {
  const { flags } = invocation;
  const ids = await redriveIds(invocation, ctx);
  const correction = await readCorrection(flags.correctFile, ids);
  if (ids.length === 0) {
    ctx.out('no dead letters match');
    return 0;
  }
  if (!(await confirmMany(ids, flags, ctx))) {
    ctx.out('nothing redriven');
    return 1;
  }
  const dryRun = flags.dryRun ?? false;
  const bar =
    ids.length > CONFIRM_ABOVE && !flags.json
      ? new cliProgress.SingleBar(
          { stream: process.stderr, clearOnComplete: true },
          cliProgress.Presets.shades_classic,
        )
      : null;
  bar?.start(ids.length, 0);
  const outcomes = await ctx.letters
    .redriveMany(
      ids,
      {
        actor: actorOf(flags),
        reason: flags.note ?? null,
        dryRun,
        force: flags.force ?? false,
        ...(correction !== undefined ? { correction } : {}),
      },
      (done) => bar?.update(done),
    )
    .finally(() => bar?.stop());
  if (flags.json) ctx.out(JSON.stringify({ dryRun, outcomes }, null, 2));
  else for (const line of formatRedrive(outcomes, dryRun)) ctx.out(line);
  return outcomes.some((o) => o.action === 'invalid' || o.action === 'not_found') ? 1 : 0;
}

async function discard({ args, flags }: DlqInvocation, ctx: DlqContext): Promise<number> {
  // --reason is the old name of --note here (it is the failure-reason filter everywhere else).
  const reason = flags.note ?? flags.reason;
  if (!reason?.trim())
    throw new UsageError(
      'dlq discard needs --note TEXT (kept in the audit log; --reason TEXT, its old name, works too)',
    );
  let failed = false;
  for (const id of parseIds(args)) {
    const { outcome } = await ctx.letters.discard(id, { actor: actorOf(flags), reason });
    failed ||= outcome.action === 'not_found';
    ctx.out(
      `#${id} ${outcome.action === 'discarded' ? 'discarded' : `${outcome.action}: ${outcome.message}`}`,
    );
  }
  return failed ? 1 : 0;
}

const COMMANDS: Record<DlqSubcommand, (i: DlqInvocation, ctx: DlqContext) => Promise<number>> = {
  list,
  show,
  redrive,
  discard,
};

/** Runs one parsed `dlq` command line; returns the exit code. UsageError means exit 2. */
export async function executeDlq(invocation: DlqInvocation, deps: DlqDeps): Promise<number> {
  const letters = createDeadLetterService({ ...deps, producer: () => deps.producer() });
  try {
    return await COMMANDS[invocation.sub](invocation, { ...deps, letters });
  } catch (error) {
    // The filter parser's 400 (a bad date, a NUL) is a usage error here.
    if (error instanceof AppError && error.status === 400) throw new UsageError(error.message);
    throw error;
  }
}

/**
 * Parses `rentbridge dlq <sub> <args>` with the same commands main.ts has, then runs it; returns
 * the exit code (0 after --help). UsageError means exit 2.
 */
export async function runDlq(sub: string, args: string[], deps: DlqDeps): Promise<number> {
  if (!(DLQ_SUBCOMMANDS as readonly string[]).includes(sub))
    throw new UsageError(`unknown dlq command "${sub}": expected list, show, redrive or discard`);
  let code = 0;
  const program = new Command('rentbridge')
    .exitOverride()
    .configureOutput({ writeOut: (text) => deps.out(text.trimEnd()), writeErr: () => undefined });
  addDlqCommands(program, async (invocation) => {
    code = await executeDlq(invocation, deps);
  });
  try {
    await program.parseAsync(['dlq', sub, ...args], { from: 'user' });
  } catch (error) {
    if (error instanceof CommanderError && error.code === 'commander.helpDisplayed') return 0;
    if (error instanceof CommanderError) throw new UsageError(error.message.replace(/^error: /, ''));
    throw error;
  }
  return code;
}

/** `rentbridge dlq …` from main.ts: the command line already parsed. */
export async function dlq(invocation: DlqInvocation): Promise<void> {
  const runtime = createCompositionRoot(loadConfigOrExit());
  try {
    process.exitCode = await executeDlq(invocation, {
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
  } finally {
    await runtime.close();
  }
}
