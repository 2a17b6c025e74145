import type { GuardPartner } from '../guard/read-backs/partner-port.js';
import { createLogger } from '../logger.js';
import { AUTHENTICATE_PATH } from '../partner/assumptions.js';
import { LIST_PATHS } from '../partner/endpoints.js';
import { createPartnerClient } from '../partner/partner-client.js';
import { createProbeHttp, type ProbeAnswer, type ProbeHttp } from './probe-http.js';
import type { AddRow, ProbeOptions, ProbeRow } from './probe-types.js';
import {
  decisionWrite,
  paymentWrite,
  type DecisionSeen,
  type PaymentSeen,
  type WriteDeps,
} from './writes.js';

/**
 * What every step of the probe works with: the raw client (the read-only steps check the
 * platform's answers as they are), the guard's own Partner API port (the production client of
 * src/partner, without a budget, recording the X-Request-Id of every answer) for the guarded
 * writes and their read-backs, and the observations several checks share, each made once.
 */
export interface ProbeContext {
  readonly options: ProbeOptions;
  readonly http: ProbeHttp;
  readonly add: AddRow;
  readonly rows: readonly ProbeRow[];
  progress(line: string): void;
  /** PARTNER_MAX_PROCESSING_MS. */
  readonly bound: number;
  readonly pollMs: number;
  readonly waitLimit: number;
  /** The first page (50) of applications, read once (ordering, date filters). */
  applicationsPage(): Promise<ProbeAnswer>;
  /** The decision `--write --application` allows, made once; null without it. */
  decisionWrite(): Promise<DecisionSeen | null>;
  /** The payment `--write --enrollment` allows, made once; null without it. */
  paymentWrite(): Promise<PaymentSeen | null>;
}

const once = <T>(make: () => Promise<T>): (() => Promise<T>) => {
  let made: Promise<T> | undefined;
  return () => (made ??= make());
};

/** The production client, as the guard uses it, recording each answer's X-Request-Id into `seen`. */
function guardPort(options: ProbeOptions, seen: string[]): GuardPartner {
  const recording: typeof fetch = async (input, init) => {
    const res = await fetch(input, init);
    if (!String(input instanceof Request ? input.url : input).endsWith(AUTHENTICATE_PATH)) {
      const sent = new Headers(init?.headers).get('x-request-id');
      const id = res.headers.get('x-request-id') ?? sent;
      if (id) seen.push(id);
    }
    return res;
  };
  return createPartnerClient({
    baseUrl: options.baseUrl,
    accessKey: options.accessKey,
    secretKey: options.secretKey,
    ...(options.enhancedSecurity !== undefined && { enhancedSecurity: options.enhancedSecurity }),
    ...(options.timeoutMs !== undefined && { timeoutMs: options.timeoutMs }),
    logger: createLogger({ level: 'silent' }),
    fetch: recording,
  });
}

export function createProbeContext(options: ProbeOptions): ProbeContext {
  const http = createProbeHttp(options);
  const rows: ProbeRow[] = [];
  const progress = options.progress ?? (() => undefined);
  const seen: string[] = [];
  const bound = options.maxProcessingMs;
  const pollMs = options.pollMs ?? 250;
  const waitLimit = bound * 2 + 2000;
  const deps: WriteDeps = { partner: guardPort(options, seen), seen, progress, pollMs, waitLimit };
  const w = options.write;
  return {
    options,
    http,
    rows,
    progress,
    bound,
    pollMs,
    waitLimit,
    add(row) {
      const full: ProbeRow = { guard: row.guard_assumption !== undefined, ...row };
      rows.push(full);
      progress(`${full.result.padEnd(14)} ${full.step}`);
    },
    applicationsPage: once(() => http.call('GET', LIST_PATHS.applications, { query: { per_page: 50 } })),
    decisionWrite: once(async () =>
      w?.applicationId
        ? decisionWrite(deps, {
            applicationId: w.applicationId,
            ...(w.decision && { decision: w.decision }),
            ...(w.reason && { reason: w.reason }),
          })
        : null,
    ),
    paymentWrite: once(async () =>
      w?.enrollmentId
        ? paymentWrite(deps, {
            enrollmentId: w.enrollmentId,
            ...(w.amountCents !== undefined && { amountCents: w.amountCents }),
          })
        : null,
    ),
  };
}
