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
  total_count?: number;
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
  /** Customer registration (spec 4.2): `POST /v1/partners/customers`. */
  createCustomer(
    body: { first_name: string; last_name: string; email: string; phone: string },
    options: WriteOptions,
  ): Promise<PartnerResult>;
  /** ASSUMPTION (src/partner/assumptions.ts): `POST /partner/v1/enrollments` with `{ customer_id }`. */
  createEnrollment(body: { customer_id: string }, options: WriteOptions): Promise<PartnerResult>;
  /** `POST /partner/v1/customers/check` (spec 4.2): no side effect; a failure carries `details`. */
  checkCustomer(body: Record<string, unknown>, options: ReadOptions | WriteOptions): Promise<PartnerResult>;
  listPage(
    resource: 'applications' | 'enrollments' | 'customers',
    query: Record<string, string | number>,
    options: ReadOptions,
  ): Promise<PartnerResult<ListEnvelope>>;
}
