import {
  APPLICATION_DECISION_PATHS,
  CREATE_CUSTOMER_PATH,
  REPORT_RENTAL_PAYMENTS_PATH,
  TOKEN_RESPONSE_FIELDS,
} from '../partner/assumptions.js';
import { BANK_ACCOUNTS_PATH, CUSTOMER_ISSUES_PATH, LIST_PATHS } from '../partner/endpoints.js';
import type { ProbeContext } from './probe-context.js';
import { describeAnswer, itemsOf, obj } from './probe-types.js';

/**
 * The probe's read-only steps about assumptions the guard does not rest on: the authenticate
 * layout, every list's path and envelope, `per_page` clamping, ordering, the shapes of bank
 * accounts and customer issues, and that the write paths exist. Each reads the platform's answers
 * as they are (src/partner-probe/probe-http.ts).
 */

function tokenLifetime(token: unknown): string {
  if (typeof token !== 'string') return '';
  try {
    const payload = obj(JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')));
    return typeof payload.exp === 'number'
      ? `JWT exp in ${payload.exp - Math.floor(Date.now() / 1000)} s`
      : '';
  } catch {
    return 'token is not a JWT';
  }
}

/** Authenticate's layout (ASSUMPTION TOKEN_RESPONSE_FIELDS); false when it did not answer 200. */
export async function authenticateStep(ctx: ProbeContext): Promise<boolean> {
  const auth = await ctx.http.authenticate();
  const body = obj(auth.body);
  const token = body[TOKEN_RESPONSE_FIELDS.token];
  const expiresIn = body[TOKEN_RESPONSE_FIELDS.expiresIn];
  const lifetime = tokenLifetime(token);
  ctx.add({
    step: 'authenticate',
    assumption: 'POST /partner/v1/authenticate answers { token, expires_in }',
    result:
      auth.status !== 200
        ? 'could_not_tell'
        : typeof token === 'string' && typeof expiresIn === 'number'
          ? 'holds'
          : 'does_not_hold',
    evidence: `${describeAnswer(auth)}; fields ${Object.keys(body).join(', ') || '(none)'}; expires_in ${String(expiresIn)}${lifetime ? `; ${lifetime}` : ''}`,
    request_ids: [auth.requestId],
  });
  return auth.status === 200;
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

/** Every list: path and envelope (spec 2.3, 4.5); per_page above 1000 clamped, below 1 refused. */
export async function listSteps(ctx: ProbeContext): Promise<void> {
  for (const [resource, path] of Object.entries(LIST_PATHS)) {
    const a = await ctx.http.call('GET', path, { query: { per_page: 1 } });
    ctx.add({
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
  const big = await ctx.http.call('GET', LIST_PATHS.applications, { query: { per_page: 5000 } });
  const zero = await ctx.http.call('GET', LIST_PATHS.applications, { query: { per_page: 0 } });
  const b = obj(big.body);
  const total = typeof b.total_count === 'number' ? b.total_count : null;
  const clamped =
    big.status === 200 && total !== null && typeof b.page_count === 'number'
      ? b.page_count === Math.max(1, Math.ceil(total / 1000)) && (b.items as unknown[]).length <= 1000
      : null;
  ctx.add({
    step: 'per_page clamping',
    assumption: 'per_page above 1000 is clamped to 1000; below 1 is 400 validation_error',
    result: clamped === null ? 'could_not_tell' : clamped && zero.status === 400 ? 'holds' : 'does_not_hold',
    evidence: `per_page=5000: ${describeAnswer(big)}, total_count ${String(total)}, page_count ${String(b.page_count)}; per_page=0: ${describeAnswer(zero)}`,
    request_ids: [big.requestId, zero.requestId],
  });
  // Ordering: newest first by id (spec 4.6) on applications, which the guard pages through.
  const firstPage = await ctx.applicationsPage();
  const ids = itemsOf(firstPage.body).map((r) => Number(r.id));
  const desc = ids.every((id, i) => i === 0 || ids[i - 1]! > id);
  ctx.add({
    step: 'ordering',
    assumption: 'applications list newest first (descending id)',
    result: ids.length < 2 || ids.some(Number.isNaN) ? 'could_not_tell' : desc ? 'holds' : 'does_not_hold',
    evidence: `first ids ${ids.slice(0, 5).join(', ') || '(none)'}`,
    request_ids: [firstPage.requestId],
  });
}

/** Bank accounts and customer issues (not paginated, shapes not shown). */
async function shapeSteps(ctx: ProbeContext): Promise<void> {
  const a = await ctx.http.call('GET', BANK_ACCOUNTS_PATH);
  ctx.add({
    step: 'bank accounts',
    assumption: `GET ${BANK_ACCOUNTS_PATH} answers an array, without the envelope (spec 4.4)`,
    result: a.status === 200 ? (Array.isArray(a.body) ? 'holds' : 'does_not_hold') : 'could_not_tell',
    evidence: describeAnswer(a),
    request_ids: [a.requestId],
  });
  const customers = await ctx.http.call('GET', LIST_PATHS.customers, { query: { per_page: 1 } });
  const customer = itemsOf(customers.body)[0];
  const assumption = `GET ${CUSTOMER_ISSUES_PATH} answers { issues: [...] } (spec 4.2)`;
  if (!customer) {
    ctx.add({
      step: 'customer issues',
      assumption,
      result: 'could_not_tell',
      evidence: 'no customer to ask about',
      request_ids: [customers.requestId],
    });
    return;
  }
  const issues = await ctx.http.call(
    'GET',
    CUSTOMER_ISSUES_PATH.replace('{id}', encodeURIComponent(String(customer.id))),
  );
  ctx.add({
    step: 'customer issues',
    assumption,
    result:
      issues.status === 200
        ? Array.isArray(obj(issues.body).issues)
          ? 'holds'
          : 'does_not_hold'
        : 'could_not_tell',
    evidence: `customer ${String(customer.id)}: ${describeAnswer(issues)}`,
    request_ids: [customers.requestId, issues.requestId],
  });
}

/**
 * Write paths exist: a harmless request (no such record, or an invalid body) must not be 404 for
 * the route or 405. A 404 may be the record's, so it cannot tell.
 */
async function writePathSteps(ctx: ProbeContext): Promise<void> {
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
    const a = await ctx.http.call('POST', path, { body });
    ctx.add({
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

/** The read-only steps after the lists: shapes of the unpaginated answers, the write paths. */
export async function shapeAndPathSteps(ctx: ProbeContext): Promise<void> {
  await shapeSteps(ctx);
  await writePathSteps(ctx);
}
