import { randomUUID } from 'node:crypto';
import {
  APPLICATION_DECISION_PATHS,
  AUTHENTICATE_PATH,
  CHECK_CUSTOMER_PATH,
  CREATE_CUSTOMER_PATH,
  CREATE_ENROLLMENT_PATH,
  ISSUE_ACCESS_TOKEN_PATH,
  REPORT_RENTAL_PAYMENTS_PATH,
} from '../../partner/assumptions.js';
import { visibleRecord, scopeFields, type Route, type RouteContext } from './route.js';
import { invalidTransition, notFoundError, SandboxError, validationError } from './sandbox-error.js';

type Body = Record<string, unknown>;

function objectBody(ctx: RouteContext): Body {
  const body = ctx.body;
  return body !== null && typeof body === 'object' && !Array.isArray(body) ? (body as Body) : {};
}

function post(
  path: string,
  options: Partial<Pick<Route, 'auth' | 'write' | 'ledger' | 'bucket'>>,
  handle: Route['handle'],
): Route {
  return {
    method: 'POST',
    path,
    auth: options.auth ?? true,
    write: options.write ?? true,
    ledger: options.ledger ?? true,
    bucket: options.bucket ?? 'default',
    handle,
  };
}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const DAY = /^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$/;
const MONTH = /^\d{4}-(0[1-9]|1[0-2])$/;

/** Applications in these states can still be decided (DESIGN.md assumption, spec 3). */
export const DECIDABLE = new Set(['submitted', 'in_review']);

/**
 * The documented trigger of `402 processor_card_error` (spec 7.2): a reported payment of
 * exactly 402 cents is declined by the "processor" and nothing is applied.
 */
export const DECLINED_AMOUNT_CENTS = 402;

function requiredStrings(body: Body, names: string[], errors: string[]): void {
  for (const name of names) {
    const value = body[name];
    if (value === undefined || value === null || value === '') errors.push(`${name} is required`);
    else if (typeof value !== 'string') errors.push(`${name} must be a string`);
  }
}

/** Spec 4.2 `check`: field → reason for each failing field, plus any scripted `check_details`. */
function eligibility(fields: Body): Record<string, string> {
  const details: Record<string, string> = {};
  for (const name of ['first_name', 'last_name']) {
    if (typeof fields[name] !== 'string' || (fields[name] as string).trim() === '')
      details[name] = 'is required';
  }
  if (typeof fields.email !== 'string' || !EMAIL.test(fields.email))
    details.email = 'is not a valid e-mail address';
  if (typeof fields.phone !== 'string' || !/^\d{10,15}$/.test(fields.phone))
    details.phone = 'must be 10 to 15 digits';
  const scripted = fields.check_details;
  if (scripted !== null && typeof scripted === 'object') Object.assign(details, scripted);
  return details;
}

function decide(target: 'approved' | 'declined'): Route['handle'] {
  return (ctx) => {
    const application = visibleRecord(ctx, 'applications');
    const body = objectBody(ctx);
    if (body.reason !== undefined && body.reason !== null && typeof body.reason !== 'string')
      throw validationError(['reason must be a string']);
    const status = String(application.status);
    if (!DECIDABLE.has(status)) throw invalidTransition(`application is ${status}; it cannot be ${target}`);
    const apply = () => {
      const now = new Date().toISOString();
      const record = ctx.state.store.collection('applications').patch(
        application.id,
        {
          status: target,
          decided_at: now,
          decision_reason: typeof body.reason === 'string' ? body.reason : null,
        },
        now,
      );
      if (record) ctx.state.changed('applications', record);
      return record;
    };
    const later = ctx.state.config.write_visibility_delay_ms;
    if (later > 0) {
      // A knob to break the processing-bound assumption: answered now, visible later.
      setTimeout(apply, later).unref();
      return { status: 200, body: { ...application, status: target } };
    }
    const record = apply();
    if (!record) throw notFoundError('application');
    return { status: 200, body: record };
  };
}

export function writeRoutes(): Route[] {
  return [
    post(AUTHENTICATE_PATH, { auth: false, write: false, ledger: false }, async (ctx) => {
      const body = objectBody(ctx);
      const errors: string[] = [];
      requiredStrings(body, ['access_key', 'secret_key'], errors);
      if (errors.length > 0) throw validationError(errors);
      const key = ctx.state.keys.check(body.access_key as string, body.secret_key as string);
      const ttl = ctx.state.config.token_ttl_seconds;
      // Assumed response layout (DESIGN.md): `{ token, expires_in }`.
      return { status: 200, body: { token: await ctx.state.keys.issue(key, ttl), expires_in: ttl } };
    }),

    post(CREATE_CUSTOMER_PATH, {}, (ctx) => {
      const body = objectBody(ctx);
      const errors: string[] = [];
      requiredStrings(body, ['first_name', 'last_name', 'email', 'phone'], errors);
      if (typeof body.email === 'string' && body.email !== '' && !EMAIL.test(body.email))
        errors.push('email must be an e-mail address');
      if (typeof body.phone === 'string' && body.phone !== '' && !/^\d+$/.test(body.phone))
        errors.push('phone must be a string of digits');
      if (errors.length > 0) throw validationError(errors);
      const email = (body.email as string).toLowerCase();
      const customers = ctx.state.store.collection('customers');
      for (const customer of customers.values()) {
        // Decision: a taken e-mail is "understood but cannot be processed": 422 validation_error.
        if (String(customer.email).toLowerCase() === email)
          throw validationError(['email has already been taken'], 422);
      }
      const record = customers.insert({
        first_name: body.first_name,
        last_name: body.last_name,
        email: body.email,
        phone: body.phone,
        ...scopeFields(ctx.key),
      });
      ctx.state.created('customers', record);
      ctx.state.changed('customers', record);
      return { status: 201, body: record };
    }),

    post(CHECK_CUSTOMER_PATH, { write: false, ledger: false }, (ctx) => {
      const body = objectBody(ctx);
      let fields: Body = body;
      if (body.customer_id !== undefined) {
        fields = visibleRecord({ ...ctx, params: { id: String(body.customer_id) } }, 'customers');
      } else if (!['first_name', 'last_name', 'email', 'phone'].some((name) => name in body)) {
        throw validationError([
          'customer_id or the customer fields (first_name, last_name, email, phone) are required',
        ]);
      }
      const details = eligibility(fields);
      if (Object.keys(details).length > 0)
        throw new SandboxError(422, 'validation_error', 'customer failed the check', { extra: { details } });
      return {
        status: 200,
        body: { eligible: true, ...(body.customer_id !== undefined ? { customer_id: fields.id } : {}) },
      };
    }),

    post(ISSUE_ACCESS_TOKEN_PATH, { ledger: false, bucket: 'issue_token' }, async (ctx) => {
      const customer = visibleRecord(ctx, 'customers');
      const ttl = ctx.state.config.token_ttl_seconds;
      if (!ctx.key) throw new SandboxError(401, 'unauthenticated', 'missing bearer token');
      // A customer-level token for SDK use; it is not accepted as an API token.
      const token = await ctx.state.keys.issue(ctx.key, ttl, { customer_id: customer.id });
      return { status: 200, body: { token, expires_in: ttl } };
    }),

    // Assumption (not in the spec): enrollments are created with `POST /partner/v1/enrollments`
    // and `{ customer_id }`; the spec only says a second active enrollment is a business error.
    post(CREATE_ENROLLMENT_PATH, {}, (ctx) => {
      const body = objectBody(ctx);
      const raw = body.customer_id;
      if (raw === undefined || raw === null) throw validationError(['customer_id is required']);
      if (!Number.isInteger(raw) && !(typeof raw === 'string' && /^\d+$/.test(raw)))
        throw validationError(['customer_id must be an integer']);
      const customer = visibleRecord({ ...ctx, params: { id: String(raw) } }, 'customers');
      const enrollments = ctx.state.store.collection('enrollments');
      for (const enrollment of enrollments.values()) {
        if (String(enrollment.customer_id) === String(customer.id) && enrollment.status === 'active') {
          // Spec 7.1 / 7.2: the legacy business-rule error, `message` and `status` only, no `code`.
          throw new SandboxError(400, undefined, 'customer already has an active enrollment');
        }
      }
      const record = enrollments.insert({
        customer_id: customer.id,
        status: 'active',
        rental_payments: [],
        ...(customer.owner_id !== undefined ? { owner_id: customer.owner_id } : {}),
        ...(customer.property_group_id !== undefined
          ? { property_group_id: customer.property_group_id }
          : {}),
      });
      ctx.state.created('enrollments', record);
      ctx.state.changed('enrollments', record);
      return { status: 201, body: record };
    }),

    post(REPORT_RENTAL_PAYMENTS_PATH, {}, (ctx) => {
      const enrollment = visibleRecord(ctx, 'enrollments');
      const body = objectBody(ctx);
      const payments = body.rental_payments;
      const errors: string[] = [];
      if (!Array.isArray(payments) || payments.length === 0) {
        errors.push('rental_payments must be a non-empty array');
      } else {
        payments.forEach((payment: unknown, i) => {
          const p = (payment ?? {}) as Body;
          if (!Number.isInteger(p.amount_cents) || (p.amount_cents as number) <= 0)
            errors.push(`rental_payments[${i}].amount_cents must be a positive integer`);
          if (typeof p.paid_on !== 'string' || !DAY.test(p.paid_on))
            errors.push(`rental_payments[${i}].paid_on must be a date YYYY-MM-DD`);
          if (p.period !== undefined && (typeof p.period !== 'string' || !MONTH.test(p.period)))
            errors.push(`rental_payments[${i}].period must be a month YYYY-MM`);
        });
      }
      if (errors.length > 0) throw validationError(errors, 422);
      if (enrollment.status !== 'active')
        throw invalidTransition(
          `enrollment is ${String(enrollment.status)}; payments need an active enrollment`,
        );
      const list = payments as Body[];
      if (list.some((p) => p.amount_cents === DECLINED_AMOUNT_CENTS)) {
        throw new SandboxError(402, 'processor_card_error', 'the card payment was declined', {
          extra: { processor_code: 'card_declined', processor_decline_code: 'insufficient_funds' },
        });
      }
      const now = new Date().toISOString();
      const added = list.map((p) => ({
        id: `rp_${randomUUID()}`,
        amount_cents: p.amount_cents,
        paid_on: p.paid_on,
        ...(p.period !== undefined ? { period: p.period } : {}),
        reported_at: now,
      }));
      const config = ctx.state.config;
      const apply = () => {
        const current = ctx.state.store.collection('enrollments').get(enrollment.id) ?? enrollment;
        const previous = Array.isArray(current.rental_payments) ? current.rental_payments : [];
        // `updated_at` given as it was keeps it (a knob to break the guard's assumption).
        const at = config.report_moves_updated_at ? new Date().toISOString() : String(current.updated_at);
        const record = ctx.state.store
          .collection('enrollments')
          .patch(enrollment.id, { rental_payments: [...previous, ...added] }, at);
        if (record) ctx.state.changed('enrollments', record);
        return record;
      };
      if (config.write_visibility_delay_ms > 0) {
        setTimeout(apply, config.write_visibility_delay_ms).unref();
        return { status: 201, body: { rental_payments: added } };
      }
      if (!apply()) throw notFoundError('enrollment');
      return { status: 201, body: { rental_payments: added } };
    }),

    // Assumed decision paths and body (DESIGN.md): `{ reason? }`.
    post(APPLICATION_DECISION_PATHS.approve, {}, decide('approved')),
    post(APPLICATION_DECISION_PATHS.decline, {}, decide('declined')),
  ];
}
