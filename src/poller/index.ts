export { createPoller, pollerIntervals } from './poller.js';
export type { Poller, PollerOptions, PassSummary, PassOutcome } from './poller.js';
export type { PassStats } from './poller-repository.js';
export type { PollerHooks } from './resource-pass.js';
export type { PollerPartner, PartnerRecord } from './partner-port.js';
export { COLLECTION_RULES, DEFAULT_INTERVAL_SECONDS, intervalSeconds } from './collections.js';
export { createResourceLock, type ResourceLock } from './resource-lock.js';
export { createRequestCounter, type RequestCounter } from './request-counter.js';
