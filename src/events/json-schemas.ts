import { z } from 'zod';
import { cloudEventSchema } from './cloudevent.js';
import {
  applicationDecisionCommandSchema,
  customerRegistrationCommandSchema,
  enrollmentCommandSchema,
  rentalPaymentCommandSchema,
} from './commands.js';
import { commandOutcomeSchema } from './outcomes.js';
import { partnerWebhookSchema } from './partner-events.js';
import {
  applicationDecidedEventSchema,
  customerRegistrationRequestedEventSchema,
  enrollmentRequestedEventSchema,
  rentPaymentReceivedEventSchema,
} from './pms-events.js';
import { stateChangeSchema } from './state-change.js';
import { unroutedEventSchema } from './unrouted.js';

/**
 * Every event and command schema, by the file name its JSON Schema gets in docs/schemas/
 * (scripts/export-schemas.ts; docs/asyncapi.yaml references them).
 */
export const EVENT_SCHEMAS: Record<string, z.ZodType> = {
  cloudevent: cloudEventSchema,
  'application-decision-command': applicationDecisionCommandSchema,
  'rental-payment-command': rentalPaymentCommandSchema,
  'pms-rent-payment-received': rentPaymentReceivedEventSchema,
  'pms-application-decided': applicationDecidedEventSchema,
  'customer-registration-command': customerRegistrationCommandSchema,
  'enrollment-command': enrollmentCommandSchema,
  'pms-customer-registration-requested': customerRegistrationRequestedEventSchema,
  'pms-enrollment-requested': enrollmentRequestedEventSchema,
  'partner-webhook': partnerWebhookSchema,
  'state-change': stateChangeSchema,
  'unrouted-event': unroutedEventSchema,
  'command-outcome': commandOutcomeSchema,
};

/** JSON Schema (draft 2020-12) of each schema, as the input a sender may give. */
export function toJsonSchemas(): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(EVENT_SCHEMAS).map(([name, schema]) => [
      name,
      {
        $id: `https://rentbridge.local/schemas/${name}.json`,
        ...z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }),
      },
    ]),
  );
}

/** The files' text, formatted as the repository's prettier formats JSON (so `lint` passes). */
export async function renderJsonSchemas(): Promise<Record<string, string>> {
  // A dev tool, loaded only by the export script and its test.
  const prettier = await import('prettier');
  const options = (await prettier.resolveConfig('docs/schemas/x.json')) ?? {};
  const out: Record<string, string> = {};
  for (const [name, schema] of Object.entries(toJsonSchemas())) {
    out[name] = await prettier.format(JSON.stringify(schema), { ...options, parser: 'json' });
  }
  return out;
}
