/**
 * The part of the Partner API client the guard and its read-back strategies call. The client in
 * src/partner satisfies it; naming it here keeps the guard testable and its needs explicit.
 */
export interface PartnerResult<T = unknown> {
  data: T;
  status: number;
  requestId: string;
}

export interface WriteOptions {
  requestId: string;
  lane: 'write';
}

export interface ReadOptions {
  requestId?: string;
  lane: 'readback';
}

export interface ListEnvelope<T = Record<string, unknown>> {
  items: T[];
  current_page?: number;
  page_count?: number;
  has_more?: boolean;
}

export interface RentalPaymentInput {
  amount_cents: number;
  paid_on: string;
  period?: string;
}

export interface GuardPartner {
  approveApplication(id: string, body: { reason?: string }, options: WriteOptions): Promise<PartnerResult>;
  declineApplication(id: string, body: { reason?: string }, options: WriteOptions): Promise<PartnerResult>;
  reportRentalPayments(
    enrollmentId: string,
    body: { rental_payments: RentalPaymentInput[] },
    options: WriteOptions,
  ): Promise<PartnerResult>;
  listPage(
    resource: 'applications' | 'enrollments',
    query: Record<string, string | number>,
    options: ReadOptions,
  ): Promise<PartnerResult<ListEnvelope>>;
}
