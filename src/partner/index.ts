export * from './assumptions.js';
export { budgetShares, NO_SOURCE, readBudgetSources, type SourceShares } from './rate-budget-sources.js';
export * from './endpoints.js';
export * from './errors.js';
export * from './partner-client.js';
export * from './rate-budget.js';
export * from './rate-budget-types.js';
export * from './resources.js';
export * from './retry-policy.js';
export * from './schemas.js';
export { pauseEnd, type ThrottledAnswer } from './throttle.js';
export type { CallOptions, PartnerResponse } from './transport.js';
export {
  outgoingRequestId,
  parseRetryAfter,
  REQUEST_ID_PATTERN,
  toApiError,
  toRequestId,
} from './transport.js';
export type { TokenManager } from './token-manager.js';
