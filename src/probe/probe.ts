import { setTimeout as sleep } from 'node:timers/promises';
import { applicationDecisionReadBack } from '../guard/application-decision-read-back.js';
import type { GuardPartner, ListEnvelope, PartnerResult } from '../guard/partner-port.js';
import { findRecord, sameTime, type ReadContext } from '../guard/read-back.js';
import { rentalPaymentReadBack } from '../guard/rental-payment-read-back.js';
import {
  CHECK_CUSTOMER_PATH,
  CREATE_ENROLLMENT_PATH,
  APPLICATION_DECISION_PATHS,
  CREATE_CUSTOMER_PATH,
  CUSTOMERS_NEWEST_FIRST,
  GUARD_ASSUMPTIONS,
  REPORT_RENTAL_PAYMENTS_PATH,
  TOKEN_RESPONSE_FIELDS,
  type GuardAssumption,
} from '../partner/assumptions.js';
import { BANK_ACCOUNTS_PATH, CUSTOMER_ISSUES_PATH, LIST_PATHS } from '../partner/endpoints.js';
import type { SourceKey } from '../partner/source-partners.js';
import { createProbeHttp, type ProbeAnswer, type ProbeHttp, type ProbeHttpOptions } from './probe-http.js';
import { probeSourceKeys } from './source-key-probe.js';

/**
 * `rentbridge probe`: checks, against the platform's own sandbox environment, the assumptions
 * rentbridge makes about what the spec does not show — above all the ones the guarded write's
 * proof rests on (src/partner/assumptions.ts, GUARD_ASSUMPTIONS). Read-only by default; with
 * `write` (and records the integrator names) it makes one decision and one payment report and
 * applies the guard's own read-back rule to what the platform then shows, timing how long the
 * change took to become visible.
 */

export type ProbeResult = 'holds' | 'does_not_hold' | 'could_not_tell';

export interface ProbeRow {
  step: string;
  assumption: string;
  /** The guard's proof rests on it (a `does_not_hold` here fails the probe). */
  guard: boolean;
  /** A row about a PMS source's own key (a `does_not_hold` here fails the probe too). */
  source_key?: boolean;
  /** The GUARD_ASSUMPTIONS id, for guard rows. */
  guard_assumption?: GuardAssumption['id'];
  result: ProbeResult;
  evidence: string;
  /** What was seen, where a step reads a property rather than checks a yes/no (e.g. `ascending`, `seconds`). */
  observed?: string;
  request_ids: string[];
}

export interface ProbeReport {
  base_url: string;
  environment: string | null;
  write: boolean;
  max_processing_ms: number;
  started_at: string;
  finished_at: string;
  rows: ProbeRow[];
  /** False when an assumption the guard relies on does not hold (consumers then refuse to start). */
  guard_assumptions_hold: boolean;
  /** False when a PMS source's own key does not authenticate or is not as configured (PMS_PARTNER_KEYS). */
  source_keys_hold: boolean;
}

export interface ProbeOptions extends ProbeHttpOptions {
  environment: string | null;
  /** PARTNER_MAX_PROCESSING_MS: the bound a change must become visible within. */
  maxProcessingMs: number;
  write?: {
    applicationId?: string;
    decision?: 'approve' | 'decline';
    reason?: string;
    enrollmentId?: string;
    amountCents?: number;
    /** Create two customers to read the customer list's order back. Default true with `write`. */
    customers?: boolean;
  };
  /** Gap between reads while waiting for a write to show. Default 250 ms. */
  pollMs?: number;
  /** PMS_PARTNER_KEYS: each source's own key, checked as the deployment key is. */
  sources?: Readonly<Record<string, SourceKey>>;
  /** Progress lines (long work shows progress). */
  progress?: (line: string) => void;
}

const obj = (v: unknown): Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};

function describeAnswer(a: ProbeAnswer): string {
  const error = obj(obj(a.body).error);
  return `${a.status}${typeof error.code === 'string' ? ` ${error.code}` : ''}`;
}

/** The guard's partner port over the probe's raw client, so the guard's own read-backs run. */
function guardPartner(http: ProbeHttp, seen: string[]): GuardPartner {
  const call = async (
    method: 'GET' | 'POST',
    path: string,
    opts: { query?: Record<string, string | number>; body?: unknown },
  ) => {
    const a = await http.call(method, path, opts);
    seen.push(a.requestId);
    if (a.status >= 300) {
      const e = obj(obj(a.body).error);
      throw Object.assign(new Error(`${method} ${path}: ${describeAnswer(a)} ${String(e.message ?? '')}`), {
        status: a.status,
        code: typeof e.code === 'string' ? e.code : null,
        requestId: a.requestId,
      });
    }
    return { data: a.body, status: a.status, requestId: a.requestId } as PartnerResult;
  };
  const decision = (which: 'approve' | 'decline') => (id: string, body: { reason?: string }) =>
    call('POST', APPLICATION_DECISION_PATHS[which].replace('{id}', encodeURIComponent(id)), { body });
  return {
    approveApplication: decision('approve'),
    declineApplication: decision('decline'),
    reportRentalPayments: (id, body) =>
      call('POST', REPORT_RENTAL_PAYMENTS_PATH.replace('{id}', encodeURIComponent(id)), { body }),
    createCustomer: (body) => call('POST', CREATE_CUSTOMER_PATH, { body }),
    createEnrollment: (body) => call('POST', CREATE_ENROLLMENT_PATH, { body }),
    checkCustomer: (body) => call('POST', CHECK_CUSTOMER_PATH, { body }),
    listPage: async (resource, query) =>
      (await call('GET', LIST_PATHS[resource], { query })) as PartnerResult<ListEnvelope>,
  };
}

const isEnvelope = (b: unknown) => {
  const e = obj(b);
  return (
    Array.isArray(e.items) &&
    typeof e.current_page === 'number' &&
    typeof e.page_count === 'number' &&
    typeof e.has_more === 'boolean'
  );
};

const day = (d: Date) => d.toISOString().slice(0, 10);

export async function runProbe(options: ProbeOptions): Promise<ProbeReport> {
  const started = new Date();
  const http = createProbeHttp(options);
  const rows: ProbeRow[] = [];
  const progress = options.progress ?? (() => undefined);
  const pollMs = options.pollMs ?? 250;
  const add = (row: Omit<ProbeRow, 'guard'> & { guard?: boolean }) => {
    const full: ProbeRow = { guard: row.guard_assumption !== undefined, ...row };
    rows.push(full);
    progress(`${full.result.padEnd(14)} ${full.step}`);
  };
  const guardRow = (id: GuardAssumption['id']) => GUARD_ASSUMPTIONS.find((a) => a.id === id)!.statement;

  // ---- authenticate ---------------------------------------------------------------------
  const auth = await http.authenticate();
  const authBody = obj(auth.body);
  const token = authBody[TOKEN_RESPONSE_FIELDS.token];
  const expiresIn = authBody[TOKEN_RESPONSE_FIELDS.expiresIn];
  let lifetime = '';
  if (typeof token === 'string') {
    try {
      const payload = obj(JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')));
      if (typeof payload.exp === 'number')
        lifetime = `JWT exp in ${payload.exp - Math.floor(Date.now() / 1000)} s`;
    } catch {
      lifetime = 'token is not a JWT';
    }
  }
  add({
    step: 'authenticate',
    assumption: 'POST /partner/v1/authenticate answers { token, expires_in }',
    result:
      auth.status !== 200
        ? 'could_not_tell'
        : typeof token === 'string' && typeof expiresIn === 'number'
          ? 'holds'
          : 'does_not_hold',
    evidence: `${describeAnswer(auth)}; fields ${Object.keys(authBody).join(', ') || '(none)'}; expires_in ${String(expiresIn)}${lifetime ? `; ${lifetime}` : ''}`,
    request_ids: [auth.requestId],
  });
  if (auth.status !== 200) {
    return finish();
  }

  // ---- each PMS source's own key (issue 34) ---------------------------------------------
  const base = {
    baseUrl: options.baseUrl,
    ...(options.enhancedSecurity !== undefined && { enhancedSecurity: options.enhancedSecurity }),
    ...(options.timeoutMs !== undefined && { timeoutMs: options.timeoutMs }),
  };
  for (const row of await probeSourceKeys(base, http, options.sources ?? {}))
    add({ ...row, source_key: true });

  // ---- every list: path and envelope (spec 2.3, 4.5) -------------------------------------
  for (const [resource, path] of Object.entries(LIST_PATHS)) {
    const a = await http.call('GET', path, { query: { per_page: 1 } });
    add({
      step: `list ${resource}`,
      assumption: `GET ${path} answers the list envelope`,
      result:
        a.status === 200
          ? isEnvelope(a.body)
            ? 'holds'
            : 'does_not_hold'
          : a.status === 404 || a.status === 405
            ? 'does_not_hold'
            : 'could_not_tell',
      evidence: `${describeAnswer(a)}; fields ${Object.keys(obj(a.body)).join(', ')}`,
      request_ids: [a.requestId],
    });
  }

  // per_page: above 1000 clamped, below 1 refused (spec 4.5).
  {
    const big = await http.call('GET', LIST_PATHS.applications, { query: { per_page: 5000 } });
    const zero = await http.call('GET', LIST_PATHS.applications, { query: { per_page: 0 } });
    const b = obj(big.body);
    const total = typeof b.total_count === 'number' ? b.total_count : null;
    const clamped =
      big.status === 200 && total !== null && typeof b.page_count === 'number'
        ? b.page_count === Math.max(1, Math.ceil(total / 1000)) && (b.items as unknown[]).length <= 1000
        : null;
    add({
      step: 'per_page clamping',
      assumption: 'per_page above 1000 is clamped to 1000; below 1 is 400 validation_error',
      result:
        clamped === null ? 'could_not_tell' : clamped && zero.status === 400 ? 'holds' : 'does_not_hold',
      evidence: `per_page=5000: ${describeAnswer(big)}, total_count ${String(total)}, page_count ${String(b.page_count)}; per_page=0: ${describeAnswer(zero)}`,
      request_ids: [big.requestId, zero.requestId],
    });
  }

  // Ordering: newest first by id (spec 4.6) on applications, which the guard pages through.
  const firstPage = await http.call('GET', LIST_PATHS.applications, { query: { per_page: 50 } });
  const apps = (obj(firstPage.body).items as Array<Record<string, unknown>> | undefined) ?? [];
  {
    const ids = apps.map((r) => Number(r.id));
    const desc = ids.every((id, i) => i === 0 || ids[i - 1]! > id);
    add({
      step: 'ordering',
      assumption: 'applications list newest first (descending id)',
      result: ids.length < 2 || ids.some(Number.isNaN) ? 'could_not_tell' : desc ? 'holds' : 'does_not_hold',
      evidence: `first ids ${ids.slice(0, 5).join(', ') || '(none)'}`,
      request_ids: [firstPage.requestId],
    });
  }

  // Date filters: inclusive whole UTC days (spec 4.7), which the decision read-back relies on.
  {
    const sample = apps.find((r) => typeof r.updated_at === 'string');
    const ids: string[] = [];
    if (!sample) {
      add({
        step: 'date_filters',
        guard_assumption: 'date_filters',
        assumption: guardRow('date_filters'),
        result: 'could_not_tell',
        evidence: 'no application with updated_at to try the filter on',
        request_ids: [firstPage.requestId],
      });
    } else {
      const d = new Date(String(sample.updated_at));
      const next = new Date(d.getTime() + 86_400_000);
      const from = await http.call('GET', LIST_PATHS.applications, {
        query: { per_page: 1000, last_updated_from_date: day(d) },
      });
      const after = await http.call('GET', LIST_PATHS.applications, {
        query: { per_page: 1000, last_updated_from_date: day(next) },
      });
      ids.push(from.requestId, after.requestId);
      const fromItems = (obj(from.body).items as Array<Record<string, unknown>> | undefined) ?? [];
      const afterItems = (obj(after.body).items as Array<Record<string, unknown>> | undefined) ?? [];
      const included = fromItems.some((r) => String(r.id) === String(sample.id));
      const excluded = !afterItems.some((r) => String(r.id) === String(sample.id));
      const allInRange = fromItems.every(
        (r) => typeof r.updated_at !== 'string' || day(new Date(r.updated_at)) >= day(d),
      );
      add({
        step: 'date_filters',
        guard_assumption: 'date_filters',
        assumption: guardRow('date_filters'),
        result:
          from.status !== 200 || after.status !== 200
            ? 'could_not_tell'
            : included && excluded && allInRange
              ? 'holds'
              : 'does_not_hold',
        evidence: `application ${String(sample.id)} updated ${String(sample.updated_at)}: from ${day(d)} ${included ? 'includes' : 'misses'} it; from ${day(next)} ${excluded ? 'leaves it out' : 'still lists it'}${allInRange ? '' : '; records before the day listed'}`,
        request_ids: ids,
      });
    }
  }

  // Bank accounts and customer issues (not paginated, shapes not shown).
  {
    const a = await http.call('GET', BANK_ACCOUNTS_PATH);
    const shapeOk = Array.isArray(a.body);
    add({
      step: 'bank accounts',
      assumption: `GET ${BANK_ACCOUNTS_PATH} answers an array, without the envelope (spec 4.4)`,
      result: a.status === 200 ? (shapeOk ? 'holds' : 'does_not_hold') : 'could_not_tell',
      evidence: describeAnswer(a),
      request_ids: [a.requestId],
    });
    const customers = await http.call('GET', LIST_PATHS.customers, { query: { per_page: 1 } });
    const customer = ((obj(customers.body).items as Array<Record<string, unknown>> | undefined) ?? [])[0];
    if (customer) {
      const issues = await http.call(
        'GET',
        CUSTOMER_ISSUES_PATH.replace('{id}', encodeURIComponent(String(customer.id))),
      );
      add({
        step: 'customer issues',
        assumption: `GET ${CUSTOMER_ISSUES_PATH} answers { issues: [...] } (spec 4.2)`,
        result:
          issues.status === 200
            ? Array.isArray(obj(issues.body).issues)
              ? 'holds'
              : 'does_not_hold'
            : 'could_not_tell',
        evidence: `customer ${String(customer.id)}: ${describeAnswer(issues)}`,
        request_ids: [customers.requestId, issues.requestId],
      });
    } else {
      add({
        step: 'customer issues',
        assumption: `GET ${CUSTOMER_ISSUES_PATH} answers { issues: [...] } (spec 4.2)`,
        result: 'could_not_tell',
        evidence: 'no customer to ask about',
        request_ids: [customers.requestId],
      });
    }
  }

  // Write paths exist: a harmless request (no such record, or an invalid body) must not be 404
  // for the route or 405. A 404 may be the record's, so it cannot tell.
  {
    const harmless: Array<[string, string, unknown]> = [
      [
        'decision approve path',
        APPLICATION_DECISION_PATHS.approve.replace('{id}', 'probe-no-such-application'),
        {},
      ],
      [
        'decision decline path',
        APPLICATION_DECISION_PATHS.decline.replace('{id}', 'probe-no-such-application'),
        {},
      ],
      [
        'report rental payments path',
        REPORT_RENTAL_PAYMENTS_PATH.replace('{id}', 'probe-no-such-enrollment'),
        { rental_payments: [] },
      ],
      ['create customer path', CREATE_CUSTOMER_PATH, {}],
    ];
    for (const [step, path, body] of harmless) {
      const a = await http.call('POST', path, { body });
      add({
        step,
        assumption: `POST ${path.replace(/probe-no-such-\w+/, '{id}')} exists`,
        result:
          a.status === 405
            ? 'does_not_hold'
            : a.status === 404
              ? 'could_not_tell'
              : a.status < 500
                ? 'holds'
                : 'could_not_tell',
        evidence: `${describeAnswer(a)} to a request that can have no effect`,
        request_ids: [a.requestId],
      });
    }
  }

  // ---- writes: the guard's own read-back rules, on what the platform shows ----------------
  const w = options.write;
  const bound = options.maxProcessingMs;
  const waitLimit = bound * 2 + 2000;
  const ctx = (seen: string[], missing: { what: string | null }): ReadContext => ({
    nextReadId: () => `probe-read-${seen.length}`,
    missing: (what) => {
      missing.what = what;
    },
  });

  if (!w?.applicationId) {
    add({
      step: 'decision visible',
      guard_assumption: 'decision_visible_on_application',
      assumption: guardRow('decision_visible_on_application'),
      result: 'could_not_tell',
      evidence: 'needs --write --application ID (a sandbox application it may decide)',
      request_ids: [],
    });
  } else {
    const seen: string[] = [];
    const missing = { what: null as string | null };
    const partner = guardPartner(http, seen);
    const strategy = applicationDecisionReadBack(partner);
    const command = {
      decision_id: `probe-${Date.now()}`,
      application_id: w.applicationId,
      decision: w.decision ?? 'approve',
      ...(w.reason ? { reason: w.reason } : {}),
    } as const;
    progress(`writing: ${command.decision} application ${w.applicationId}`);
    const snapshot = await strategy.snapshot(command, ctx(seen, missing));
    let writeError: string | null = null;
    const sentAt = Date.now();
    try {
      await strategy.write(command, `probe-write-${Date.now()}`);
    } catch (error) {
      writeError = (error as Error).message;
    }
    let visibleMs: number | null = null;
    let verdict = 'unknown';
    if (!writeError) {
      for (;;) {
        verdict = await strategy.verdict(command, snapshot, ctx(seen, missing));
        if (verdict === 'applied') {
          visibleMs = Date.now() - sentAt;
          break;
        }
        if (Date.now() - sentAt > waitLimit) break;
        await sleep(pollMs);
      }
    }
    add({
      step: 'decision visible',
      guard_assumption: 'decision_visible_on_application',
      assumption: guardRow('decision_visible_on_application'),
      result: writeError ? 'could_not_tell' : visibleMs !== null ? 'holds' : 'does_not_hold',
      evidence: writeError
        ? `the decision was not accepted: ${writeError}`
        : visibleMs !== null
          ? `the read-back saw the ${command.decision} after ${visibleMs} ms (status was ${String(snapshot.status)})`
          : `not visible by the guard's rule within ${waitLimit} ms (last verdict ${verdict}${missing.what ? `: ${missing.what}` : ''})`,
      request_ids: [...seen],
    });
    add({
      step: 'decision within bound',
      guard_assumption: 'max_processing_time',
      assumption: guardRow('max_processing_time'),
      result: visibleMs === null ? 'could_not_tell' : visibleMs <= bound ? 'holds' : 'does_not_hold',
      evidence:
        visibleMs === null ? 'the decision never showed' : `visible after ${visibleMs} ms; bound ${bound} ms`,
      request_ids: [],
    });
  }

  if (!w?.enrollmentId) {
    for (const id of ['payment_visible_on_enrollment', 'report_moves_updated_at'] as const) {
      add({
        step: id === 'payment_visible_on_enrollment' ? 'payment visible' : 'report moves updated_at',
        guard_assumption: id,
        assumption: guardRow(id),
        result: 'could_not_tell',
        evidence: 'needs --write --enrollment ID (a sandbox enrollment it may report a payment to)',
        request_ids: [],
      });
    }
  } else {
    const seen: string[] = [];
    const missing = { what: null as string | null };
    const partner = guardPartner(http, seen);
    const strategy = rentalPaymentReadBack(partner);
    const now = new Date();
    const command = {
      payment_id: `probe-${Date.now()}`,
      enrollment_id: w.enrollmentId,
      amount_cents: w.amountCents ?? 100,
      paid_on: day(now),
      period: day(now).slice(0, 7),
    };
    progress(`writing: report a payment of ${command.amount_cents} cents to enrollment ${w.enrollmentId}`);
    const c = ctx(seen, missing);
    const before = await findRecord(partner, 'enrollments', command.enrollment_id, {}, c);
    const snapshot = await strategy.snapshot(command, c);
    let writeError: string | null = null;
    const sentAt = Date.now();
    try {
      await strategy.write(command, `probe-write-${Date.now()}`);
    } catch (error) {
      writeError = (error as Error).message;
    }
    let visibleMs: number | null = null;
    let movedMs: number | null = null;
    let after: Record<string, unknown> | null = null;
    if (!writeError) {
      for (;;) {
        const verdict = await strategy.verdict(command, snapshot, ctx(seen, missing));
        if (visibleMs === null && verdict === 'applied') visibleMs = Date.now() - sentAt;
        after = await findRecord(partner, 'enrollments', command.enrollment_id, {}, c);
        if (
          movedMs === null &&
          after &&
          !sameTime(String(after.updated_at ?? ''), String(before?.updated_at ?? ''))
        )
          movedMs = Date.now() - sentAt;
        if ((visibleMs !== null && movedMs !== null) || Date.now() - sentAt > waitLimit) break;
        await sleep(pollMs);
      }
    }
    const hasList = Array.isArray(after?.rental_payments ?? before?.rental_payments);
    add({
      step: 'payment visible',
      guard_assumption: 'payment_visible_on_enrollment',
      assumption: guardRow('payment_visible_on_enrollment'),
      result: writeError
        ? hasList
          ? 'could_not_tell'
          : 'does_not_hold'
        : visibleMs !== null
          ? 'holds'
          : 'does_not_hold',
      evidence: writeError
        ? `the report was not accepted: ${writeError}${hasList ? '' : '; the enrollment record has no rental_payments'}`
        : visibleMs !== null
          ? `the payment showed in rental_payments after ${visibleMs} ms`
          : hasList
            ? `no matching payment in rental_payments within ${waitLimit} ms`
            : `the enrollment record has no rental_payments (fields: ${Object.keys(after ?? before ?? {}).join(', ')})`,
      request_ids: [...seen],
    });
    add({
      step: 'report moves updated_at',
      guard_assumption: 'report_moves_updated_at',
      assumption: guardRow('report_moves_updated_at'),
      result: writeError ? 'could_not_tell' : movedMs !== null ? 'holds' : 'does_not_hold',
      evidence: writeError
        ? 'the report was not accepted'
        : movedMs !== null
          ? `updated_at moved from ${String(before?.updated_at)} to ${String(after?.updated_at)} after ${movedMs} ms`
          : `updated_at still ${String(after?.updated_at ?? before?.updated_at)} after ${waitLimit} ms`,
      request_ids: [],
    });
    const shown = visibleMs ?? movedMs;
    add({
      step: 'payment within bound',
      guard_assumption: 'max_processing_time',
      assumption: guardRow('max_processing_time'),
      result: shown === null ? 'could_not_tell' : shown <= bound ? 'holds' : 'does_not_hold',
      evidence: shown === null ? 'the payment never showed' : `visible after ${shown} ms; bound ${bound} ms`,
      request_ids: [],
    });
  }

  // The customer list's order, which the registration read-back walks (decision 018): two
  // customers created within one second, read back newest first.
  if (!w || w.customers === false) {
    add({
      step: 'customer order',
      guard_assumption: 'customers_newest_first',
      assumption: guardRow('customers_newest_first'),
      result: 'could_not_tell',
      evidence: 'needs --write (creates two customers on the sandbox environment)',
      request_ids: [],
    });
  } else {
    await probeCustomerOrder(http, add, guardRow('customers_newest_first'), progress, waitLimit, pollMs);
  }

  return finish();

  function finish(): ProbeReport {
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
}

/** The report as a plain-text table: assumption, result, evidence with request ids. */
export function probeTable(report: ProbeReport): string {
  const mark = { holds: 'holds', does_not_hold: 'DOES NOT HOLD', could_not_tell: 'could not tell' } as const;
  const lines = report.rows.map((r) => [
    `${r.guard ? '* ' : '  '}${r.step}`,
    mark[r.result],
    `${r.evidence}${r.request_ids.length ? ` [X-Request-Id ${r.request_ids.slice(0, 3).join(', ')}${r.request_ids.length > 3 ? ', …' : ''}]` : ''}`,
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
        ].join(', ')} — see README "Going live".`,
    ...(report.source_keys_hold
      ? []
      : ['A PMS source key is not as configured (PMS_PARTNER_KEYS): see the "source" rows above.']),
  ];
  return out.join('\n');
}

type AddRow = (row: Omit<ProbeRow, 'guard'> & { guard?: boolean }) => void;

const at = (v: unknown): number | null => {
  if (typeof v !== 'string') return null;
  const t = Date.parse(v);
  return Number.isNaN(t) ? null : t;
};

/** `…:22.123Z` has a fraction; `…:22Z` and `…:22.000Z` (read as "to the second") do not. */
const subSecond = (v: unknown) => typeof v === 'string' && /\.\d*[1-9]\d*(Z|[+-]\d\d:?\d\d)?$/.test(v);

/**
 * Creates pairs of customers one right after the other (up to three pairs, until two share a
 * `created_at`) and reads the newest-first list back: the order the guard relies on, the direction
 * ties are broken in, the precision of `created_at`.
 */
async function probeCustomerOrder(
  http: ProbeHttp,
  add: AddRow,
  statement: string,
  progress: (line: string) => void,
  waitLimit: number,
  pollMs: number,
): Promise<void> {
  const ids: string[] = [];
  const created: Array<Record<string, unknown>> = [];
  let tie: { first: Record<string, unknown>; second: Record<string, unknown> } | null = null;
  let orderOk = true;
  let orderEvidence = '';
  let failed: string | null = null;
  const stamp = Date.now().toString(36);
  for (let pair = 1; pair <= 3 && !tie && !failed; pair++) {
    progress(`writing: two customers, one right after the other (pair ${pair})`);
    const pairCreated: Array<Record<string, unknown>> = [];
    for (const which of ['a', 'b']) {
      const a = await http.call('POST', CREATE_CUSTOMER_PATH, {
        body: {
          first_name: 'Rentbridge',
          last_name: `Probe ${which.toUpperCase()}`,
          email: `rentbridge-probe-${stamp}-${pair}${which}@example.com`,
          phone: '5550000000',
        },
      });
      ids.push(a.requestId);
      if (a.status >= 300) {
        failed = `creating a customer answered ${describeAnswer(a)}`;
        break;
      }
      pairCreated.push(obj(a.body));
    }
    if (failed) break;
    created.push(...pairCreated);
    const [a, b] = pairCreated as [Record<string, unknown>, Record<string, unknown>];
    // Read back until both are listed (a lagging list shows them later).
    const started = Date.now();
    let items: Array<Record<string, unknown>> = [];
    for (;;) {
      const list = await http.call('GET', LIST_PATHS.customers, {
        query: {
          order_by: CUSTOMERS_NEWEST_FIRST.orderBy,
          order_direction: CUSTOMERS_NEWEST_FIRST.orderDirection,
          per_page: 100,
        },
      });
      ids.push(list.requestId);
      items = (obj(list.body).items as Array<Record<string, unknown>> | undefined) ?? [];
      const listed = [a, b].every((c) => items.some((r) => String(r.id) === String(c.id)));
      if (listed) break;
      if (Date.now() - started > waitLimit) {
        failed = `the two customers created were not both listed within ${waitLimit} ms`;
        break;
      }
      await sleep(pollMs);
    }
    if (failed) break;
    const ia = items.findIndex((r) => String(r.id) === String(a.id));
    const ib = items.findIndex((r) => String(r.id) === String(b.id));
    const la = items[ia]!;
    const lb = items[ib]!;
    const ta = at(la.created_at);
    const tb = at(lb.created_at);
    if (ta === null || tb === null) {
      failed = `a customer is listed without created_at (${String(la.created_at)}, ${String(lb.created_at)})`;
      break;
    }
    const times = items.map((r) => at(r.created_at));
    const sorted = times.every(
      (t, i) => i === 0 || (t !== null && times[i - 1]! !== null && times[i - 1]! >= t),
    );
    const laterNotOlder = tb >= ta;
    const laterFirst = tb > ta ? ib < ia : true;
    if (!(sorted && laterNotOlder && laterFirst)) {
      orderOk = false;
      orderEvidence = !sorted
        ? 'the list is not sorted by created_at, newest first'
        : !laterNotOlder
          ? `the customer created second shows an older created_at (${String(lb.created_at)} < ${String(la.created_at)})`
          : 'the customer created second is listed after the first though newer';
      break;
    }
    orderEvidence = `customers ${String(a.id)} (${String(la.created_at)}) and ${String(b.id)} (${String(lb.created_at)}) listed newest first`;
    if (ta === tb) tie = ia < ib ? { first: la, second: lb } : { first: lb, second: la };
  }

  if (failed) {
    for (const step of ['customer order', 'customer tie-break', 'created_at precision'])
      add({
        step,
        ...(step === 'customer order' && { guard_assumption: 'customers_newest_first' as const }),
        assumption: step === 'customer order' ? statement : 'see customer order',
        result: 'could_not_tell',
        evidence: failed,
        request_ids: ids,
      });
    return;
  }
  add({
    step: 'customer order',
    guard_assumption: 'customers_newest_first',
    assumption: statement,
    result: orderOk ? 'holds' : 'does_not_hold',
    evidence: orderEvidence,
    request_ids: ids,
  });

  const precise = created.some((c) => subSecond(c.created_at));
  add({
    step: 'created_at precision',
    assumption: 'created_at is ISO 8601 (precision not shown; the read-back works at any)',
    result: 'holds',
    observed: precise ? 'sub-second' : 'seconds',
    evidence: `created_at of the customers created: ${created.map((c) => String(c.created_at)).join(', ')}`,
    request_ids: [],
  });

  const direction = tie
    ? BigInt(/^\d+$/.test(String(tie.first.id)) ? String(tie.first.id) : '0') <
      BigInt(/^\d+$/.test(String(tie.second.id)) ? String(tie.second.id) : '0')
      ? 'ascending'
      : 'descending'
    : null;
  add({
    step: 'customer tie-break',
    assumption:
      'customers sharing a created_at are ordered by id (direction not shown; the read-back works with either)',
    result: direction ? 'holds' : 'could_not_tell',
    ...(direction && { observed: direction }),
    evidence: tie
      ? `customers ${String(tie.first.id)} and ${String(tie.second.id)} share created_at ${String(tie.first.created_at)}: listed ${String(tie.first.id)} first, ties by ${direction} id`
      : `no two customers created back to back shared a created_at (${precise ? 'sub-second precision' : 'each pair crossed a second'})`,
    request_ids: [],
  });
}
