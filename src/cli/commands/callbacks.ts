import { createCompositionRoot, runRoles } from '../../app/composition-root.js';
import { redeliverCallbacks, formatDeliveries } from '../../callbacks/callback-ops.js';
import {
  attemptsOf,
  enableEndpoint,
  endpointStates,
  listDeliveries,
  queueBySource,
  type DeliveryState,
} from '../../callbacks/callback-repository.js';
import { writeAudit } from '../../dead-letters/audit-repository.js';
import { COMMAND_KINDS } from '../../contracts/outcomes.js';
import { cliActor } from '../cli-actor.js';
import { loadConfigOrExit, UsageError } from '../process.js';
import { DEMO_PMS_SOURCE } from '../demo-names.js';
import { maskPersonal } from '../../personal-data.js';
import { terminalSafe } from '../../terminal-text.js';
import { requireMigrated } from '../require-migrated.js';

/**
 * `rentbridge callbacks run|status|list|show|redeliver|enable` (docs/pms.md, "Outcome callbacks"): the
 * callback role as its own process, and what ops do with deliveries.
 */

const STATES = ['pending', 'delivered', 'dead', 'all'] as const;

/** `rentbridge callbacks run`: the intake and the delivery loops; /metrics and health on HTTP_PORT. */
export async function run(): Promise<void> {
  const root = createCompositionRoot(loadConfigOrExit());
  await requireMigrated(root.config.DATABASE_URL, root.logger);
  const role = root.callbacks();
  if (!role) {
    await root.close();
    throw new UsageError('PMS_CALLBACKS names no source: there is nothing to deliver');
  }
  await runRoles(root, () => [root.probes(), role], { before: () => root.ensureTopics() });
}

async function withDb<T>(work: (root: ReturnType<typeof createCompositionRoot>) => Promise<T>): Promise<T> {
  const root = createCompositionRoot(loadConfigOrExit());
  try {
    return await work(root);
  } finally {
    await root.close();
  }
}

export async function status(opts: { json?: boolean }): Promise<void> {
  await withDb(async (root) => {
    const [queues, endpoints] = await Promise.all([queueBySource(root.db), endpointStates(root.db)]);
    const sources = [...new Set([...Object.keys(root.config.PMS_CALLBACKS), ...queues.map((q) => q.source)])];
    const rows = sources.map((source) => {
      const q = queues.find((x) => x.source === source);
      const e = endpoints.find((x) => x.source === source);
      const url = root.config.PMS_CALLBACKS[source]?.url ?? null;
      // `npm start`'s demo configures its own PMS's callbacks in its process, not in this shell.
      const byDemo = url === null && source === DEMO_PMS_SOURCE && !root.config.PARTNER_API_URL;
      return {
        source,
        configured: url !== null || byDemo,
        ...(byDemo && { configured_by: 'npm start (the demo)' }),
        endpoint: e?.disabledUrl && e.disabledUrl === url ? 'disabled (410 Gone)' : (e?.breaker ?? 'closed'),
        pending: q?.pending ?? 0,
        oldest_pending_seconds: Math.round(q?.oldestPendingSeconds ?? 0),
        dead: q?.dead ?? 0,
        delivered: q?.delivered ?? 0,
      };
    });
    if (opts.json) return void process.stdout.write(`${JSON.stringify(rows, null, 2)}\n`);
    for (const r of rows) {
      process.stdout.write(
        terminalSafe(
          `${r.source}: ${r.configured_by ? `configured by ${r.configured_by}` : r.configured ? r.endpoint : 'not in PMS_CALLBACKS'} · pending ${r.pending} (oldest ${r.oldest_pending_seconds} s) · dead ${r.dead} · delivered (24 h) ${r.delivered}`,
        ) + '\n',
      );
    }
  });
}

/** `callbacks list`'s options, as commander parses them (src/cli/callbacks-program.ts). */
export interface ListOptions {
  state: string;
  source?: string;
  commandId?: string;
  commandType?: string;
  limit: string;
  json?: boolean;
}

export async function list(opts: ListOptions): Promise<void> {
  if (!(STATES as readonly string[]).includes(opts.state)) {
    throw new UsageError(`--state must be one of ${STATES.join(', ')}`);
  }
  if (opts.commandType !== undefined && !(COMMAND_KINDS as readonly string[]).includes(opts.commandType))
    throw new UsageError(`--command-type must be one of ${COMMAND_KINDS.join(', ')}`);
  const limit = Number(opts.limit);
  if (!Number.isInteger(limit) || limit < 1 || limit > 10_000)
    throw new UsageError('--limit must be 1 to 10000');
  await withDb(async (root) => {
    const deliveries = await listDeliveries(root.db, {
      ...(opts.state !== 'all' && { state: opts.state as DeliveryState }),
      ...(opts.source !== undefined && { source: opts.source }),
      ...(opts.commandId !== undefined && { commandId: opts.commandId }),
      ...(opts.commandType !== undefined && { commandType: opts.commandType }),
      limit,
    });
    const out = opts.json
      ? JSON.stringify(maskPersonal(deliveries.map(({ payload: _payload, ...d }) => d)), null, 2)
      : formatDeliveries(deliveries);
    process.stdout.write(`${out}\n`);
  });
}

export async function show(id: string): Promise<void> {
  if (!/^[1-9][0-9]{0,18}$/.test(id)) throw new UsageError(`"${id}" is not a delivery id`);
  await withDb(async (root) => {
    const [delivery] = await listDeliveries(root.db, { ids: [id] });
    if (!delivery) {
      process.stderr.write(`rentbridge: no callback delivery ${id}\n`);
      process.exitCode = 1;
      return;
    }
    const attempts = await attemptsOf(root.db, id);
    process.stdout.write(
      `${JSON.stringify(maskPersonal({ ...delivery, payload: JSON.parse(delivery.payload) as unknown, attempts }), null, 2)}\n`,
    );
  });
}

export async function redeliverCommand(
  ids: string[],
  opts: { all?: boolean; source?: string; actor?: string; reason?: string },
): Promise<void> {
  if (ids.length === 0 && !opts.all)
    throw new UsageError('name delivery ids, or --all (with --source to narrow it)');
  if (ids.length > 0 && opts.all) throw new UsageError('either delivery ids or --all, not both');
  for (const id of ids)
    if (!/^[1-9][0-9]{0,18}$/.test(id)) throw new UsageError(`"${id}" is not a delivery id`);
  await withDb(async (root) => {
    const done = await redeliverCallbacks(root.db, {
      ...(ids.length > 0 && { ids }),
      ...(opts.all && { all: true }),
      ...(opts.source !== undefined && { source: opts.source }),
      actor: cliActor(opts.actor),
      ...(opts.reason !== undefined && { reason: opts.reason }),
    });
    process.stdout.write(
      `redelivering ${done.length} callback(s)${done.length ? `: ${done.join(', ')}` : ''}\n`,
    );
    // Asked for ids that are not dead letters: say so (exit 1), they were left as they are.
    if (ids.length > 0 && done.length < ids.length) {
      const left = ids.filter((i) => !done.includes(i));
      process.stderr.write(`rentbridge: not dead letters (left as they are): ${left.join(', ')}\n`);
      process.exitCode = 1;
    }
  });
}

export async function enable(source: string): Promise<void> {
  await withDb(async (root) => {
    const was = await enableEndpoint(root.db, source);
    if (was)
      await writeAudit(root.db, {
        actor: cliActor(),
        action: 'callback_enable',
        target: `callback_endpoint:${source}`,
      });
    process.stdout.write(
      was ? `the callback endpoint of ${source} is enabled again\n` : `${source}: not disabled\n`,
    );
  });
}
