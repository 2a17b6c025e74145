import type { PartnerClient } from '../partner/index.js';

/**
 * What the poller needs of the Partner API client: the drift-safe page walk, bank accounts and a
 * customer's issues, always on the low-priority `poll` lane of the shared budget.
 */
export type PollerPartner = Pick<PartnerClient, 'pages' | 'bankAccounts' | 'customerIssues'>;

export type { PartnerRecord } from '../partner/index.js';
