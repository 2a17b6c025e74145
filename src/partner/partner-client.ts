import { AsyncLocalStorage } from 'node:async_hooks';
import { z } from 'zod';
import type { Logger } from '../logger.js';
import {
  APPLICATION_DECISION_PATHS,
  AUTHENTICATE_PATH,
  CHECK_CUSTOMER_PATH,
  CREATE_CUSTOMER_PATH,
  CREATE_ENROLLMENT_PATH,
  ISSUE_ACCESS_TOKEN_PATH,
  REPORT_RENTAL_PAYMENTS_PATH,
  type CreateEnrollmentBody,
  type DecisionBody,
  type ReportRentalPaymentsBody,
} from './assumptions.js';
import {
  BANK_ACCOUNTS_PATH,
  CUSTOMER_ISSUES_PATH,
  LIST_PATHS,
  fillPath,
  toSearchParams,
  type ListQuery,
  type PagedResource,
} from './endpoints.js';
import { walkPages, dedupeRecords } from './pagination.js';
import type { RateBudget } from './rate-budget-types.js';
import {
  bankAccountsSchema,
  customerIssuesSchema,
  listPageSchema,
  partnerRecordSchema,
  tokenResponseSchema,
  unknownJson,
  type ListPage,
  type PartnerRecord,
} from './schemas.js';
import { createTokenManager, type TokenManager } from './token-manager.js';
import { createTransport, type CallOptions, type PartnerResponse } from './transport.js';

/** Per-page default of the client's walks: the spec's maximum (4.5), fewest requests. */
export const DEFAULT_PER_PAGE = 1000;

/** Create-customer input (spec 2.2). */
export type CustomerInput = { first_name: string; last_name: string; email: string; phone: string } & Record<
  string,
  unknown
>;

export interface PartnerClient {
  listPage<R extends PagedResource>(
    resource: R,
    query?: ListQuery<R>,
    opts?: CallOptions,
  ): Promise<PartnerResponse<ListPage>>;
  /**
   * Every page of a list, `per_page` 1000 by default, drift-safe: no record present during the
   * whole walk is missed when others are deleted (spec 4.6.4), and records already yielded are
   * left out of later pages (so creations while paging cause no repeats). Pages re-read to
   * recover from a deletion are yielded too, holding only the records not yet seen.
   */
  pages<R extends PagedResource>(
    resource: R,
    query?: ListQuery<R>,
    opts?: CallOptions,
  ): AsyncIterable<PartnerResponse<ListPage>>;
  /** Every record of a list, each id once. */
  records<R extends PagedResource>(
    resource: R,
    query?: ListQuery<R>,
    opts?: CallOptions,
  ): AsyncIterable<PartnerRecord>;
  bankAccounts(opts?: CallOptions): Promise<PartnerResponse<PartnerRecord[]>>;
  customerIssues(
    customerId: string | number,
    opts?: CallOptions,
  ): Promise<PartnerResponse<{ issues: PartnerRecord[] }>>;
  createCustomer(body: CustomerInput, opts?: CallOptions): Promise<PartnerResponse<PartnerRecord>>;
  checkCustomer(body: Record<string, unknown>, opts?: CallOptions): Promise<PartnerResponse<unknown>>;
  /** ASSUMPTION (assumptions.ts): the create-enrollment path and body. */
  createEnrollment(body: CreateEnrollmentBody, opts?: CallOptions): Promise<PartnerResponse<PartnerRecord>>;
  issueCustomerAccessToken(
    customerId: string | number,
    opts?: CallOptions,
  ): Promise<PartnerResponse<Record<string, unknown>>>;
  approveApplication(
    id: string | number,
    body: DecisionBody,
    opts?: CallOptions,
  ): Promise<PartnerResponse<PartnerRecord>>;
  declineApplication(
    id: string | number,
    body: DecisionBody,
    opts?: CallOptions,
  ): Promise<PartnerResponse<PartnerRecord>>;
  reportRentalPayments(
    enrollmentId: string | number,
    body: ReportRentalPaymentsBody,
    opts?: CallOptions,
  ): Promise<PartnerResponse<unknown>>;
  readonly tokens: TokenManager;
}

export interface PartnerClientDeps {
  baseUrl: string;
  accessKey: string;
  secretKey: string;
  /** Sends `X-Access-Token: <access key>` on every call (spec 5.5). Default false. */
  enhancedSecurity?: boolean;
  /** Time-out of each attempt. Default 10 000 ms. */
  timeoutMs?: number;
  /** The shared budget; without it the client does not pace itself (tests, one-off tools). */
  budget?: RateBudget;
  logger: Logger;
  fetch?: typeof fetch;
  /** Waits between attempts (back-off, Retry-After). Default: the real timer; tests inject a fake. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Jitter source in [0, 1). Default Math.random. */
  random?: () => number;
}

export function createPartnerClient(deps: PartnerClientDeps): PartnerClient {
  const logger = deps.logger.child({ component: 'partner-client' });
  const transportDeps = {
    baseUrl: deps.baseUrl,
    accessKey: deps.accessKey,
    enhancedSecurity: deps.enhancedSecurity ?? false,
    timeoutMs: deps.timeoutMs ?? 10_000,
    logger,
    fetch: deps.fetch ?? globalThis.fetch,
    ...(deps.budget && { budget: deps.budget }),
    ...(deps.sleep && { sleep: deps.sleep }),
    ...(deps.random && { random: deps.random }),
  };
  // Authenticate has no bearer token and no side effect, so it is repeated like a GET.
  const unauthenticated = createTransport(transportDeps);
  const tokens = createTokenManager({
    logger,
    authenticate: async () => {
      const res = await unauthenticated(
        {
          method: 'POST',
          template: AUTHENTICATE_PATH,
          path: AUTHENTICATE_PATH,
          body: { access_key: deps.accessKey, secret_key: deps.secretKey },
          schema: tokenResponseSchema,
          authenticated: false,
          retry: true,
        },
        { lane: 'write' },
      );
      return {
        token: res.data.token,
        ...(res.data.expires_in !== undefined && { expiresInSeconds: res.data.expires_in }),
      };
    },
  });
  const call = createTransport({ ...transportDeps, tokens });

  function listPage<R extends PagedResource>(resource: R, query?: ListQuery<R>, opts?: CallOptions) {
    const template = LIST_PATHS[resource];
    return call(
      {
        method: 'GET',
        template,
        path: template,
        query: toSearchParams({ ...(query as Record<string, unknown>) }),
        schema: listPageSchema as z.ZodType<ListPage>,
      },
      opts,
    );
  }

  function pages<R extends PagedResource>(
    resource: R,
    query: ListQuery<R> = {} as ListQuery<R>,
    opts?: CallOptions,
  ) {
    return walkPages({
      resource,
      query,
      perPage: query.per_page ?? DEFAULT_PER_PAGE,
      fetchPage: (page, perPage) => listPage(resource, { ...query, page, per_page: perPage }, opts),
      logger,
    });
  }

  function write<T>(
    template: string,
    id: string | number | undefined,
    body: unknown,
    schema: z.ZodType<T>,
    opts?: CallOptions,
  ) {
    return call(
      {
        method: 'POST',
        template,
        path: id === undefined ? template : fillPath(template, id),
        body,
        schema,
      },
      opts,
    );
  }

  return {
    tokens,
    listPage,
    pages,
    records: (resource, query, opts) => dedupeRecords(pages(resource, query, opts)),
    bankAccounts: (opts) =>
      call(
        { method: 'GET', template: BANK_ACCOUNTS_PATH, path: BANK_ACCOUNTS_PATH, schema: bankAccountsSchema },
        opts,
      ),
    customerIssues: (customerId, opts) =>
      call(
        {
          method: 'GET',
          template: CUSTOMER_ISSUES_PATH,
          path: fillPath(CUSTOMER_ISSUES_PATH, customerId),
          schema: customerIssuesSchema,
        },
        opts,
      ),
    createCustomer: (body, opts) => write(CREATE_CUSTOMER_PATH, undefined, body, partnerRecordSchema, opts),
    checkCustomer: (body, opts) => write(CHECK_CUSTOMER_PATH, undefined, body, unknownJson, opts),
    createEnrollment: (body, opts) =>
      write(CREATE_ENROLLMENT_PATH, undefined, body, partnerRecordSchema, opts),
    issueCustomerAccessToken: (customerId, opts) =>
      write(ISSUE_ACCESS_TOKEN_PATH, customerId, undefined, z.record(z.string(), z.unknown()), opts),
    approveApplication: (id, body, opts) =>
      write(APPLICATION_DECISION_PATHS.approve, id, body, partnerRecordSchema, opts),
    declineApplication: (id, body, opts) =>
      write(APPLICATION_DECISION_PATHS.decline, id, body, partnerRecordSchema, opts),
    reportRentalPayments: (enrollmentId, body, opts) =>
      write(REPORT_RENTAL_PAYMENTS_PATH, enrollmentId, body, unknownJson, opts),
  };
}

/**
 * The PMS source a Partner API call is made for, as the shared budget sees it (issue 52: slots go
 * round-robin by source). The guard runs each command's walk in its source's scope, so its
 * snapshot, its write and its read-backs, made deep in the command types' read-backs, are counted
 * to that source without each call passing it along. A call made outside any scope (the poller,
 * resync, the console's reads) is counted to no source.
 */
const scope = new AsyncLocalStorage<string>();

/** Runs `work` with its Partner API calls counted to `source`. */
export function forBudgetSource<T>(source: string, work: () => Promise<T>): Promise<T> {
  return scope.run(source, work);
}

/** The source the current call is made for, if any. */
export function budgetSource(): string | undefined {
  return scope.getStore();
}
