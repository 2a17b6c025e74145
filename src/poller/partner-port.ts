/**
 * What the poller needs of the Partner API client (src/partner): lazy page iteration on the
 * low-priority lane, the bank accounts call and a customer's issues. The client satisfies it
 * structurally; tests and benchmarks pass the real client against the sandbox.
 */
export type PartnerRecord = Record<string, unknown>;

export interface PollPage {
  data: {
    items: PartnerRecord[];
    current_page: number;
    page_count: number;
    total_count: number;
    has_more: boolean;
  };
  requestId?: string;
  status?: number;
}

export interface PollLane {
  lane: 'poll';
}

export interface PollerPartner {
  /** Pages of a collection, fetched one at a time as the caller asks for the next. */
  pages(resource: string, query: Record<string, string | number>, opts: PollLane): AsyncIterable<PollPage>;
  bankAccounts(opts: PollLane): Promise<{ data: PartnerRecord[]; requestId?: string }>;
  customerIssues(
    customerId: string,
    opts: PollLane,
  ): Promise<{ data: { issues: PartnerRecord[] }; requestId?: string }>;
}
