import { GUARD_ASSUMPTIONS, type GuardAssumption } from '../partner/assumptions.js';
import { checkOf } from './checks/index.js';
import { createProbeContext, type ProbeContext } from './probe-context.js';
import type { ProbeOptions, ProbeReport } from './probe-types.js';
import { authenticateStep, listSteps, shapeAndPathSteps } from './read-steps.js';
import { terminalSafe } from '../terminal-text.js';
import { probeSourceKeys } from './source-key-probe.js';

export type { ProbeOptions, ProbeReport, ProbeResult, ProbeRow } from './probe-types.js';

/**
 * `rentbridge probe`: checks, against the platform's own sandbox environment, the assumptions
 * rentbridge makes about what the spec does not show — above all the ones the guarded write's
 * proof rests on (src/partner/assumptions.ts, GUARD_ASSUMPTIONS). Read-only by default; with
 * `write` (and records the integrator names) it makes one decision and one payment report and
 * applies the guard's own read-back rule, through the guard's own Partner API port, to what the
 * platform then shows, timing how long the change took to become visible.
 *
 * The steps: authenticate, each PMS source's own key, the lists, the check of each guard
 * assumption read-only steps can tell, the other read-only steps, then the check of each guard
 * assumption that needs a write: one check per assumption, in the order of GUARD_ASSUMPTIONS
 * (src/partner-probe/checks/<id>.ts, decision 033).
 */
export async function runProbe(options: ProbeOptions): Promise<ProbeReport> {
  const started = new Date();
  const ctx = createProbeContext(options);
  if (await authenticateStep(ctx)) {
    await sourceKeySteps(ctx);
    await listSteps(ctx);
    await guardChecks(ctx, 'read');
    await shapeAndPathSteps(ctx);
    await guardChecks(ctx, 'write');
  }
  const rows = [...ctx.rows];
  return {
    base_url: options.baseUrl,
    environment: options.environment,
    write: Boolean(options.write),
    max_processing_ms: options.maxProcessingMs,
    started_at: started.toISOString(),
    finished_at: new Date().toISOString(),
    rows,
    guard_assumptions_hold: !rows.some((r) => r.guard && r.result === 'does_not_hold'),
    source_keys_hold: !rows.some((r) => r.source_key && r.result === 'does_not_hold'),
  };
}

/** The checks of the guard assumptions whose probe step reads only, or writes (`probeStep`). */
async function guardChecks(ctx: ProbeContext, kind: 'read' | 'write'): Promise<void> {
  const ofKind = (a: GuardAssumption) => a.probeStep.startsWith(`${kind}: `);
  for (const assumption of GUARD_ASSUMPTIONS.filter(ofKind)) await checkOf(assumption.id)(ctx, assumption);
}

/** Each PMS source's own key (issue 34), checked as the deployment key is. */
async function sourceKeySteps(ctx: ProbeContext): Promise<void> {
  const { options } = ctx;
  const base = {
    baseUrl: options.baseUrl,
    ...(options.enhancedSecurity !== undefined && { enhancedSecurity: options.enhancedSecurity }),
    ...(options.timeoutMs !== undefined && { timeoutMs: options.timeoutMs }),
  };
  for (const row of await probeSourceKeys(base, ctx.http, options.sources ?? {}))
    ctx.add({ ...row, source_key: true });
}

/** The report as a plain-text table: assumption, result, evidence with request ids. */
export function probeTable(report: ProbeReport): string {
  const mark = { holds: 'holds', does_not_hold: 'DOES NOT HOLD', could_not_tell: 'could not tell' } as const;
  const lines = report.rows.map((r) => [
    `${r.guard ? '* ' : '  '}${r.step}`,
    mark[r.result],
    // The evidence quotes the Partner API's answers: outside text, escaped for the terminal.
    `${terminalSafe(r.evidence)}${r.request_ids.length ? ` [X-Request-Id ${r.request_ids.slice(0, 3).join(', ')}${r.request_ids.length > 3 ? ', …' : ''}]` : ''}`,
  ]);
  const w0 = Math.max(...lines.map((l) => l[0]!.length), 10);
  const w1 = Math.max(...lines.map((l) => l[1]!.length), 6);
  const out = [
    `Partner API probe of ${report.base_url} (${report.environment ?? 'environment not declared'}${report.write ? ', with writes' : ', read-only'})`,
    '',
    `${'step'.padEnd(w0)}  ${'result'.padEnd(w1)}  evidence`,
    ...lines.map(([a, b, c]) => `${a!.padEnd(w0)}  ${b!.padEnd(w1)}  ${c}`),
    '',
    '* an assumption the guarded write relies on (src/partner/assumptions.ts)',
    report.guard_assumptions_hold
      ? 'Every guard assumption checked holds or could not be told.'
      : `Guard assumptions that DO NOT HOLD: ${[
          ...new Set(
            report.rows.filter((r) => r.guard && r.result === 'does_not_hold').map((r) => r.guard_assumption),
          ),
        ].join(', ')} — see docs/operations.md, "Going live".`,
    ...(report.source_keys_hold
      ? []
      : ['A PMS source key is not as configured (PMS_PARTNER_KEYS): see the "source" rows above.']),
  ];
  return out.join('\n');
}
