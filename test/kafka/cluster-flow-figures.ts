/**
 * The figures of the cluster flow run (test/kafka/cluster-flow.test.ts, issue 53), from what it
 * recorded: every webhook sent, the commands and outcomes on Kafka with their broker times, the
 * callbacks received, the /readyz samples, and when brokers went down and answered again.
 */
export interface FlowRecord {
  sent: Array<{ id: string; sentAt: number; ackedAt: number | null }>;
  phases: { oneDownAt: number; oneBackAt: number; twoDownAt: number; twoBackAt: number };
  commands: Array<{ id: string; at: number }>;
  outcomes: Array<{ id: string; at: number }>;
  callbacks: Array<{ id: string; at: number }>;
  /** Every 250 ms: whether every process's /readyz answered 200. */
  ready: Array<{ at: number; ready: boolean }>;
}

export interface FlowFigures {
  sent: number;
  acked: number;
  steady: { p50: number; p99: number; gapOutcomes: number };
  oneDown: {
    seconds: number;
    gapCommands: number;
    gapOutcomes: number;
    gapCallbacks: number;
    p50: number;
    p99: number;
  };
  twoDown: {
    seconds: number;
    ackedDuring: number;
    firstCommandAfterBack: number;
    /** The outage's last command on Kafka: until then the revived brokers were not taking its writes. */
    lastCommandAfterBack: number;
    readyAfterBack: number | null;
    lastOutcomeAfterBack: number;
    readyAfterLastOutcome: number | null;
  };
  duplicates: { commands: number; outcomes: number; commandsOfOutage: number; sentDuringOutages: number };
}

const seconds = (ms: number) => Math.round(ms / 100) / 10;

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/** The longest time in [from, to] with no message: the window's edges count as messages. */
export function longestGap(times: number[], from: number, to: number): number {
  const inside = times.filter((t) => t >= from && t <= to).sort((a, b) => a - b);
  const points = [from, ...inside, to];
  let gap = 0;
  for (let i = 1; i < points.length; i++) gap = Math.max(gap, points[i]! - points[i - 1]!);
  return gap;
}

/** The first time each id appears. */
function firstById(items: Array<{ id: string; at: number }>): Map<string, number> {
  const first = new Map<string, number>();
  for (const { id, at } of items) if (!first.has(id) || first.get(id)! > at) first.set(id, at);
  return first;
}

/** Ids that appear more than once. */
function repeated(items: Array<{ id: string }>): Set<string> {
  const seen = new Set<string>();
  const twice = new Set<string>();
  for (const { id } of items) (seen.has(id) ? twice : seen).add(id);
  return twice;
}

export function flowFigures(r: FlowRecord): FlowFigures {
  const { oneDownAt, oneBackAt, twoDownAt, twoBackAt } = r.phases;
  const outcomeAt = firstById(r.outcomes);
  const latencies = (from: number, to: number) =>
    r.sent
      .filter((s) => s.sentAt >= from && s.sentAt < to && outcomeAt.has(s.id))
      .map((s) => outcomeAt.get(s.id)! - s.sentAt);
  const times = (items: Array<{ at: number }>) => items.map((i) => i.at);
  const steadyFrom = r.sent[0]?.sentAt ?? oneDownAt;
  const steady = latencies(steadyFrom, oneDownAt);
  const one = latencies(oneDownAt, oneBackAt);
  const ackedDuring = r.sent.filter(
    (s) => s.ackedAt !== null && s.ackedAt >= twoDownAt && s.ackedAt <= twoBackAt,
  );
  const lastOutcome = Math.max(...ackedDuring.map((s) => outcomeAt.get(s.id) ?? Infinity));
  const commandAt = firstById(r.commands);
  const lastCommand = Math.max(...ackedDuring.map((s) => commandAt.get(s.id) ?? Infinity));
  // Past the sends in flight at the kill: the first command the relay got onto Kafka afterwards.
  const firstCommand = Math.min(...r.commands.filter((c) => c.at > twoDownAt + 1000).map((c) => c.at));
  const readyAt = (after: number) => r.ready.find((s) => s.at >= after && s.ready)?.at ?? null;
  const readyBack = readyAt(twoBackAt);
  const readyLast = readyAt(lastOutcome);
  const twiceCommands = repeated(r.commands);
  const outage = r.sent.filter(
    (s) =>
      (s.sentAt >= oneDownAt && s.sentAt <= oneBackAt) || (s.sentAt >= twoDownAt && s.sentAt <= twoBackAt),
  );
  return {
    sent: r.sent.length,
    acked: r.sent.filter((s) => s.ackedAt !== null).length,
    steady: {
      p50: seconds(percentile(steady, 50)),
      p99: seconds(percentile(steady, 99)),
      gapOutcomes: seconds(longestGap(times(r.outcomes), steadyFrom + 2000, oneDownAt)),
    },
    oneDown: {
      seconds: seconds(oneBackAt - oneDownAt),
      gapCommands: seconds(longestGap(times(r.commands), oneDownAt, oneBackAt)),
      gapOutcomes: seconds(longestGap(times(r.outcomes), oneDownAt, oneBackAt)),
      gapCallbacks: seconds(longestGap(times(r.callbacks), oneDownAt, oneBackAt)),
      p50: seconds(percentile(one, 50)),
      p99: seconds(percentile(one, 99)),
    },
    twoDown: {
      seconds: seconds(twoBackAt - twoDownAt),
      ackedDuring: ackedDuring.length,
      firstCommandAfterBack: seconds(firstCommand - twoBackAt),
      lastCommandAfterBack: seconds(lastCommand - twoBackAt),
      readyAfterBack: readyBack === null ? null : seconds(readyBack - twoBackAt),
      lastOutcomeAfterBack: seconds(lastOutcome - twoBackAt),
      readyAfterLastOutcome: readyLast === null ? null : seconds(readyLast - lastOutcome),
    },
    duplicates: {
      commands: twiceCommands.size,
      outcomes: repeated(r.outcomes).size,
      commandsOfOutage: outage.filter((s) => twiceCommands.has(s.id)).length,
      sentDuringOutages: outage.length,
    },
  };
}

export function formatFigures(f: FlowFigures): string {
  return [
    `cluster flow: ${f.sent} webhooks sent, ${f.acked} acknowledged`,
    `  steady: webhook → outcome p50 ${f.steady.p50} s / p99 ${f.steady.p99} s; longest outcome gap ${f.steady.gapOutcomes} s`,
    `  one broker down ${f.oneDown.seconds} s: longest gap commands ${f.oneDown.gapCommands} s, outcomes ${f.oneDown.gapOutcomes} s, callbacks ${f.oneDown.gapCallbacks} s; webhook → outcome p50 ${f.oneDown.p50} s / p99 ${f.oneDown.p99} s`,
    `  two brokers down ${f.twoDown.seconds} s (${f.twoDown.ackedDuring} acknowledged meanwhile); after both answered: first command on Kafka ${f.twoDown.firstCommandAfterBack} s, the outage's last ${f.twoDown.lastCommandAfterBack} s, every /readyz 200 ${f.twoDown.readyAfterBack ?? 'never'} s, last outcome of the outage's commands ${f.twoDown.lastOutcomeAfterBack} s (/readyz 200 ${f.twoDown.readyAfterLastOutcome ?? 'never'} s after it)`,
    `  published more than once: ${f.duplicates.commands} commands (${f.duplicates.commandsOfOutage} of the ${f.duplicates.sentDuringOutages} sent during the outages), ${f.duplicates.outcomes} outcomes`,
  ].join('\n');
}
