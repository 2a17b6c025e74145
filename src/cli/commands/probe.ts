import { writeFileSync } from 'node:fs';
import { sourceKeys } from '../../partner/source-partners.js';
import { runProbe, probeTable } from '../../partner-probe/probe.js';
import { partnerApiUrl } from '../demo-partner.js';
import { loadConfigOrExit, UsageError } from '../process.js';

export interface ProbeCliOptions {
  write?: boolean;
  application?: string;
  decision?: string;
  enrollment?: string;
  amountCents?: string;
  out: string;
}

/**
 * `rentbridge probe`: checks the Partner API at PARTNER_API_URL against rentbridge's
 * assumptions (docs/operations.md, "Going live"), and each PMS source's own key (PMS_PARTNER_KEYS). Prints a
 * table, writes it as JSON (`--out`), exits 1 when an assumption the guard relies on does not hold
 * or a source key is not as configured, 2 on bad usage.
 */
export async function probe(opts: ProbeCliOptions): Promise<void> {
  const config = loadConfigOrExit();
  if (opts.write) {
    // Never writes against production: only a base URL the configuration declares a sandbox.
    if (config.PARTNER_ENVIRONMENT !== 'sandbox') {
      throw new UsageError(
        `--write needs PARTNER_ENVIRONMENT=sandbox (PARTNER_API_URL is ${config.PARTNER_ENVIRONMENT ? `declared ${config.PARTNER_ENVIRONMENT}` : 'not declared'}): the probe never writes to production`,
      );
    }
    // --write alone creates two customers (the customer order); --application and --enrollment
    // name the records it may decide or report a payment to.
  } else if (opts.application || opts.enrollment) {
    throw new UsageError('--application and --enrollment are for --write');
  }
  if (opts.decision !== undefined && opts.decision !== 'approve' && opts.decision !== 'decline')
    throw new UsageError('--decision must be approve or decline');
  const amount = opts.amountCents === undefined ? undefined : Number(opts.amountCents);
  if (amount !== undefined && (!Number.isInteger(amount) || amount <= 0))
    throw new UsageError('--amount-cents must be a positive integer');

  // Checked after the options: a usage error is told before the network is asked anything.
  const baseUrl = await partnerApiUrl(config, (line) => process.stderr.write(`probe: ${line}\n`));
  const report = await runProbe({
    baseUrl,
    accessKey: config.PARTNER_ACCESS_KEY,
    secretKey: config.PARTNER_SECRET_KEY,
    enhancedSecurity: config.PARTNER_ENHANCED_SECURITY,
    timeoutMs: config.PARTNER_TIMEOUT_MS,
    environment: config.PARTNER_ENVIRONMENT ?? null,
    maxProcessingMs: config.PARTNER_MAX_PROCESSING_MS,
    sources: sourceKeys(config),
    ...(opts.write && {
      write: {
        ...(opts.application && { applicationId: opts.application }),
        ...(opts.decision && { decision: opts.decision as 'approve' | 'decline' }),
        ...(opts.enrollment && { enrollmentId: opts.enrollment }),
        ...(amount !== undefined && { amountCents: amount }),
      },
    }),
    progress: (line) => process.stderr.write(`probe: ${line}\n`),
  });
  writeFileSync(opts.out, `${JSON.stringify(report, null, 2)}\n`);
  process.stdout.write(`${probeTable(report)}\n\nwritten to ${opts.out}\n`);
  if (!report.guard_assumptions_hold || !report.source_keys_hold) process.exitCode = 1;
}
