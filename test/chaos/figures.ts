import type { LedgerEntry, WebhookDelivery } from '../../src/dev/sandbox/control-client.js';
import type { FaultRecord } from './fault-injector.js';
import type { Analysis } from './invariants.js';
import { isWritePath } from './invariants.js';
import type { LoadState } from './load-generator.js';
import type { UnexpectedExit } from './process-supervisor.js';

/** The figures of one chaos run, as printed and as written to docs/chaos.md. */
export interface ChaosFigures {
  run: Record<string, string | number>;
  events: Record<string, number>;
  commands: Record<string, number>;
  parkedByReason: Record<string, number>;
  statesByCount: Record<string, number>;
  faultsByKind: Record<string, number>;
  faults: Array<FaultRecord & { effect: string; guard: string }>;
  unexpectedExits: UnexpectedExit[];
  attemptResults: Array<{
    kind: string;
    result: string;
    status: number | null;
    code: string | null;
    n: number;
  }>;
  /** What compaction leaves of the changelogs (CHAOS_COMPACTION=1), else absent. */
  compaction?: Record<string, string | number>;
}

export interface FigureInputs {
  load: LoadState;
  analysis: Analysis;
  commandStates: Map<string, string>;
  ledger: LedgerEntry[];
  deliveries: WebhookDelivery[];
  faults: FaultRecord[];
  /** Per fault (same order): what the guard's calls to the Partner API did during it. */
  guardDuring: string[];
  unexpectedExits: UnexpectedExit[];
  attemptResults: ChaosFigures['attemptResults'];
  run: Record<string, string | number>;
}

const inc = (o: Record<string, number>, k: string, n = 1) => {
  o[k] = (o[k] ?? 0) + n;
};

export function computeFigures(input: FigureInputs): ChaosFigures {
  const { load, analysis } = input;
  const hooks = load.webhooks;
  const originals = hooks.filter((h) => h.kind !== 'replay');
  const answers = hooks.flatMap((h) => h.answers);
  const commandEvents = [
    ...(analysis.events.get('commands.rental-payments') ?? []),
    ...(analysis.events.get('commands.application-decisions') ?? []),
    ...(analysis.events.get('commands.customer-registrations') ?? []),
    ...(analysis.events.get('commands.enrollments') ?? []),
  ];
  const partnerEvents = [...analysis.events].filter(([t]) => t.startsWith('partner.')).flatMap(([, l]) => l);
  const distinct = (list: Array<{ id: string }>) => new Set(list.map((e) => e.id)).size;

  const events: Record<string, number> = {
    'PMS webhooks sent (distinct webhook-id)': originals.length,
    'replays sent (same webhook-id again)': hooks.length - originals.length,
    'HTTP requests made (with sender retries)': answers.length,
    'acknowledged (2xx)': hooks.filter((h) => h.ackAt !== undefined).length,
    'answered duplicate': hooks.filter((h) => h.duplicate).length,
    'never acknowledged (sender gave up)': hooks.filter((h) => h.ackAt === undefined && !h.refused).length,
    'refused with 4xx': hooks.filter((h) => h.refused).length,
    'answers 5xx': answers.filter((a) => typeof a.status === 'number' && a.status >= 500).length,
    'answers 429': answers.filter((a) => a.status === 429).length,
    'connection errors / time-outs': answers.filter((a) => a.status === 'network').length,
    'command events published (distinct CloudEvent ids)': distinct(commandEvents),
    'command event messages on the topics (with repeats)': commandEvents.length,
    'unrouted events published (distinct ids)': distinct(analysis.events.get('inbound.unrouted') ?? []),
    'sandbox record changes made': load.recordChanges.filter((c) => c.ok).length,
    'sandbox webhooks (deliveries)': input.deliveries.length,
    'sandbox webhooks acknowledged': input.deliveries.filter((d) =>
      d.attempts.some((a) => a.status !== null && a.status >= 200 && a.status < 300),
    ).length,
    'sandbox webhooks failed for good': input.deliveries.filter((d) => d.status === 'failed').length,
    'state changes published (distinct ids)': distinct(partnerEvents),
    'messages that are not CloudEvents': analysis.unparseable,
  };

  const statesByCount: Record<string, number> = {};
  const inSystem = new Set([...analysis.ackedCommandIds, ...analysis.publishedCommandIds]);
  for (const id of inSystem) inc(statesByCount, input.commandStates.get(id) ?? 'missing');

  const writes = input.ledger.filter((w) => w.method === 'POST' && isWritePath(w.path));
  const commands: Record<string, number> = {
    'commands sent (distinct ids)': load.commands.size,
    'commands acknowledged': analysis.ackedCommandIds.size,
    'commands published': analysis.publishedCommandIds.size,
    'sent again under a new webhook-id': hooks.filter((h) => h.kind === 'resent_command').length,
    'conflicting decisions (second decision of an application)': [...load.commands.values()].filter(
      (c) =>
        c.conflicting &&
        c.kind === 'decision' &&
        hooks.some((h) => h.commandId === c.commandId && h.kind === 'conflicting_decision'),
    ).length,
    'registrations sent (chained enrollments not counted)': [...load.commands.values()].filter(
      (c) => c.kind === 'registration',
    ).length,
    'enrollments (sent or chained)': [...load.commands.values()].filter((c) => c.kind === 'enrollment')
      .length,
    'customers created (ledger)': input.ledger.filter(
      (w) => w.applied && w.method === 'POST' && w.path === '/v1/partners/customers',
    ).length,
    'enrollments created (ledger)': input.ledger.filter(
      (w) => w.applied && w.method === 'POST' && w.path === '/partner/v1/enrollments',
    ).length,
    'applied (ledger, distinct commands)': analysis.appliedByLedger.size,
    'applied twice or more (ledger)': [...analysis.appliedByLedger.values()].filter((n) => n > 1).length,
    'write calls that reached the sandbox': writes.length,
    'write calls applied': writes.filter((w) => w.applied).length,
    'write calls applied but answered with an error or not at all': writes.filter(
      (w) => w.applied && (w.status === null || w.status >= 300),
    ).length,
    'parked (distinct commands in dead letters)': analysis.parkedReasons.size,
  };
  const parkedByReason: Record<string, number> = {};
  for (const reasons of analysis.parkedReasons.values())
    for (const r of reasons) inc(parkedByReason, r || '(none)');

  const faultsByKind: Record<string, number> = {};
  for (const f of input.faults)
    inc(faultsByKind, f.kind.startsWith('kill:') ? 'SIGKILL of a process' : f.kind);

  const faults = input.faults.map((f, i) => ({
    ...f,
    effect: effectOf(f, load),
    guard: input.guardDuring[i] ?? '',
  }));

  return {
    run: input.run,
    events,
    commands,
    parkedByReason,
    statesByCount,
    faultsByKind,
    faults,
    unexpectedExits: input.unexpectedExits,
    attemptResults: input.attemptResults,
  };
}

/** What the load saw while the fault lasted (and 5 s after): answers by kind. */
function effectOf(fault: FaultRecord, load: LoadState): string {
  const from = fault.startAt;
  const to = fault.windowEndAt ?? (fault.endAt ?? fault.startAt) + 5000;
  const inWindow = load.webhooks.flatMap((h) => h.answers).filter((a) => a.at >= from && a.at <= to);
  const by: Record<string, number> = {};
  for (const a of inWindow) {
    const k = a.status === 'network' ? 'conn-err' : a.status >= 500 ? '5xx' : a.status >= 400 ? '4xx' : '2xx';
    inc(by, k);
  }
  return Object.entries(by)
    .map(([k, n]) => `${k} ${n}`)
    .join(', ');
}

function table(rows: Array<[string, string | number]>, head: [string, string]): string {
  return [`| ${head[0]} | ${head[1]} |`, '|---|---:|', ...rows.map(([k, v]) => `| ${k} | ${v} |`)].join('\n');
}

const ms = (v: number | null) => (v === null ? 'not seen' : `${(v / 1000).toFixed(1)} s`);

export function figuresMarkdown(f: ChaosFigures, checks: Analysis['checks']): string {
  const out: string[] = [];
  out.push(table(Object.entries(f.run), ['run', '']));
  out.push('', '### Invariants', '');
  out.push(
    table(
      checks.map((c) => [
        c.name,
        c.ok ? `ok (${c.checked} checked)` : `**FAILED** ${c.failureCount} of ${c.checked}`,
      ]),
      ['invariant', 'result'],
    ),
  );
  out.push('', '### Events', '', table(Object.entries(f.events), ['events', 'count']));
  out.push('', '### Commands', '', table(Object.entries(f.commands), ['commands', 'count']));
  out.push('', table(Object.entries(f.statesByCount), ['final state (commands table)', 'commands']));
  out.push('', table(Object.entries(f.parkedByReason), ['parked, by dlq-reason', 'commands']));
  out.push('', '### Faults injected', '', table(Object.entries(f.faultsByKind), ['fault', 'times']));
  out.push(
    '',
    '| at (s) | fault | what was done | recovery | webhook answers during it | guard calls during it |',
    '|---:|---|---|---|---|---|',
  );
  const t0 = Number(f.run['load started at (ms)'] ?? 0);
  for (const x of f.faults) {
    const rec = x.recoveries.map((r) => `${r.what} ${ms(r.ms)}`).join('; ') || '-';
    out.push(
      `| ${((x.startAt - t0) / 1000).toFixed(1)} | ${x.kind} | ${x.detail}${x.error ? ` (error: ${x.error})` : ''} | ${rec} | ${x.effect || '-'} | ${x.guard || '-'} |`,
    );
  }
  if (f.attemptResults.length > 0) {
    out.push('', '### What the guard saw (command_attempts, whole run)', '');
    out.push('| kind | result | status | code | attempts |', '|---|---|---:|---|---:|');
    for (const a of f.attemptResults)
      out.push(`| ${a.kind} | ${a.result} | ${a.status ?? '-'} | ${a.code ?? '-'} | ${a.n} |`);
  }
  if (f.compaction) {
    out.push('', '### The changelogs compacted (a copy, cleaner settings made eager)', '');
    out.push(table(Object.entries(f.compaction), ['changelog', 'as the run left it / compacted']));
  }
  out.push('', '### Processes that exited on their own (restarted by the harness)', '');
  out.push(
    f.unexpectedExits.length === 0
      ? 'none'
      : f.unexpectedExits
          .map(
            (e) =>
              `- ${e.name}: exit code ${e.code ?? '-'} signal ${e.signal ?? '-'} at ${((e.at - t0) / 1000).toFixed(1)} s`,
          )
          .join('\n'),
  );
  return out.join('\n');
}
