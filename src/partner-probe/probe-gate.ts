import { readFileSync } from 'node:fs';
import { UsageError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { ProbeReport } from './probe.js';

/**
 * The command consumers' start-up check (issue 22): when PARTNER_PROBE_RESULT names a
 * `rentbridge probe` result that says an assumption the guard relies on does not hold, the
 * guard's proof does not hold either, so the consumers refuse to start (exit 2) unless the
 * operator overrides it explicitly (PARTNER_PROBE_OVERRIDE=true).
 */
export function requireProbeAssumptions(
  config: { PARTNER_PROBE_RESULT?: string | undefined; PARTNER_PROBE_OVERRIDE: boolean },
  logger: Logger,
): void {
  const file = config.PARTNER_PROBE_RESULT;
  if (!file) return;
  let report: ProbeReport;
  try {
    report = JSON.parse(readFileSync(file, 'utf8')) as ProbeReport;
  } catch (error) {
    throw new UsageError(`PARTNER_PROBE_RESULT: cannot read ${file}: ${(error as Error).message}`);
  }
  if (!Array.isArray(report.rows))
    throw new UsageError(`PARTNER_PROBE_RESULT: ${file} is not a probe result`);
  const broken = [
    ...new Set(
      report.rows
        .filter((r) => r.guard && r.result === 'does_not_hold')
        .map((r) => r.guard_assumption ?? r.step),
    ),
  ];
  if (broken.length === 0) return;
  const what = `the probe result ${file} (${report.base_url}, ${report.finished_at}) says guard assumption(s) do not hold: ${broken.join(', ')}`;
  if (config.PARTNER_PROBE_OVERRIDE) {
    logger.warn({ broken, file }, `${what}; starting anyway (PARTNER_PROBE_OVERRIDE=true)`);
    return;
  }
  throw new UsageError(
    `${what}. The guard could write a payment or decision twice: change src/partner/assumptions.ts (docs/operations.md, "Going live"), probe again, or set PARTNER_PROBE_OVERRIDE=true to start anyway`,
  );
}
