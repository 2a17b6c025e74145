import { z } from 'zod';
import {
  applicationDecisionCommandSchema,
  customerRegistrationCommandSchema,
  enrollmentCommandSchema,
  rentalPaymentCommandSchema,
} from './commands.js';

/**
 * What property-management systems send to `POST /webhooks/pms/:source`: an envelope
 * `{ type, data }` whose `data` is already the command rentbridge will carry to the Partner API.
 */
export const PMS_EVENT_TYPES = {
  rentPaymentReceived: 'rent_payment.received',
  applicationDecided: 'application.decided',
  customerRegistrationRequested: 'customer.registration_requested',
  enrollmentRequested: 'enrollment.requested',
} as const;

/** Any webhook body: a type and its data. Unknown types pass this and go to inbound.unrouted. */
export const webhookEnvelopeSchema = z.looseObject({
  type: z.string().min(1).max(200),
  data: z.unknown(),
});

export const rentPaymentReceivedEventSchema = z.looseObject({
  type: z.literal(PMS_EVENT_TYPES.rentPaymentReceived),
  data: rentalPaymentCommandSchema,
});
export type RentPaymentReceivedEvent = z.infer<typeof rentPaymentReceivedEventSchema>;

export const applicationDecidedEventSchema = z.looseObject({
  type: z.literal(PMS_EVENT_TYPES.applicationDecided),
  data: applicationDecisionCommandSchema,
});
export type ApplicationDecidedEvent = z.infer<typeof applicationDecidedEventSchema>;

export const customerRegistrationRequestedEventSchema = z.looseObject({
  type: z.literal(PMS_EVENT_TYPES.customerRegistrationRequested),
  data: customerRegistrationCommandSchema,
});
export type CustomerRegistrationRequestedEvent = z.infer<typeof customerRegistrationRequestedEventSchema>;

export const enrollmentRequestedEventSchema = z.looseObject({
  type: z.literal(PMS_EVENT_TYPES.enrollmentRequested),
  data: enrollmentCommandSchema,
});
export type EnrollmentRequestedEvent = z.infer<typeof enrollmentRequestedEventSchema>;

export const pmsEventSchema = z.discriminatedUnion('type', [
  rentPaymentReceivedEventSchema,
  applicationDecidedEventSchema,
  customerRegistrationRequestedEventSchema,
  enrollmentRequestedEventSchema,
]);
