import type { Logger } from './logger.js';

/**
 * A line that would repeat once per request at `info` (a command final, a slot taken after
 * waiting, an outcome callback received), summarised (issue 41: under steady traffic such lines
 * scrolled `npm start`'s banner off the screen within seconds). The caller logs each occurrence
 * at `debug`; this counts them and, a minute after the first one of a window, writes ONE `info`
 * line with the count, the count per label and the largest of each measure given.
 */
export interface LogSummary {
  /**
   * One occurrence: `label` is counted apart (`applied=12 rejected=2`); `largest` keep their
   * maximum over the window, `sums` their total.
   */
  add(label?: string, largest?: Record<string, number>, sums?: Record<string, number>): void;
  /** Writes the window's line now (when anything was counted) and starts a new window. */
  flush(): void;
}

export const SUMMARY_EVERY_MS = 60_000;

function createLogSummary(logger: Logger, message: string, everyMs: number): LogSummary {
  let total = 0;
  let byLabel = new Map<string, number>();
  let largest: Record<string, number> = {};
  let sums: Record<string, number> = {};
  let timer: NodeJS.Timeout | undefined;
  const flush = () => {
    clearTimeout(timer);
    timer = undefined;
    if (total === 0) return;
    const seconds = Math.round(everyMs / 1000);
    logger.info({ count: total, ...Object.fromEntries(byLabel), ...largest, ...sums, seconds }, message);
    total = 0;
    byLabel = new Map();
    largest = {};
    sums = {};
  };
  return {
    add(label, max, sum) {
      total += 1;
      if (label) byLabel.set(label, (byLabel.get(label) ?? 0) + 1);
      for (const [name, value] of Object.entries(max ?? {}))
        largest[name] = Math.max(largest[name] ?? value, value);
      for (const [name, value] of Object.entries(sum ?? {})) sums[name] = (sums[name] ?? 0) + value;
      if (!timer) {
        timer = setTimeout(flush, everyMs);
        // A summary never keeps a process alive; a line still counted at exit is lost (it was at debug).
        timer.unref();
      }
    },
    flush,
  };
}

const summaries = new WeakMap<Logger, Map<string, LogSummary>>();

/** The one summary of `message` for `logger` (the same logger and message: the same counts). */
export function logSummary(logger: Logger, message: string, everyMs = SUMMARY_EVERY_MS): LogSummary {
  let byMessage = summaries.get(logger);
  if (!byMessage) summaries.set(logger, (byMessage = new Map()));
  let summary = byMessage.get(message);
  if (!summary) byMessage.set(message, (summary = createLogSummary(logger, message, everyMs)));
  return summary;
}
