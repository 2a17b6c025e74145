import {
  createPartnerClient,
  createRateBudget,
  type PartnerClient,
  type RateBudget,
} from '../partner/index.js';
import type { Runtime } from '../runtime.js';

/**
 * A Partner API client for one role of this process, paced by the budget shared (through
 * PostgreSQL) with every process on the egress IP. `fetch` lets a role count its own requests.
 */
export function createPartnerForRole(
  runtime: Runtime,
  options: { baseUrl: string; fetch?: typeof fetch },
): { partner: PartnerClient; budget: RateBudget } {
  const { config, logger, db } = runtime;
  const budget = createRateBudget({ db, limitPerMinute: config.PARTNER_RATE_LIMIT_PER_MINUTE, logger });
  const partner = createPartnerClient({
    baseUrl: options.baseUrl,
    accessKey: config.PARTNER_ACCESS_KEY,
    secretKey: config.PARTNER_SECRET_KEY,
    enhancedSecurity: config.PARTNER_ENHANCED_SECURITY,
    timeoutMs: config.PARTNER_TIMEOUT_MS,
    budget,
    logger,
    ...(options.fetch && { fetch: options.fetch }),
  });
  return { partner, budget };
}
