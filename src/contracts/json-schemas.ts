import { z } from 'zod';
import { cloudEventSchema } from './cloudevent.js';
import { commandOutcomeSchema } from './outcomes.js';
import { partnerWebhookSchema } from './partner-events.js';
import { stateChangeSchema } from './state-change.js';
import { unroutedEventSchema } from './unrouted.js';
import { reconciliationReportSchema } from './reconciliation-report.js';

/**
 * Every event schema that is not a command type's, by the file name its JSON Schema gets in
 * docs/schemas/ (scripts/export-schemas.ts; docs/asyncapi.yaml references them). Each command
 * type's command and PMS webhook come from the list of command types (src/contracts/command-contracts.ts).
 */
export const EVENT_SCHEMAS: Record<string, z.ZodType> = {
  cloudevent: cloudEventSchema,
  'partner-webhook': partnerWebhookSchema,
  'state-change': stateChangeSchema,
  'unrouted-event': unroutedEventSchema,
  'command-outcome': commandOutcomeSchema,
  'reconciliation-report': reconciliationReportSchema,
};

/** JSON Schema (draft 2020-12) of each schema, as the input a sender may give. */
export function toJsonSchemas(schemas: Record<string, z.ZodType> = EVENT_SCHEMAS): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(schemas).map(([name, schema]) => [
      name,
      {
        $id: `https://rentbridge.local/schemas/${name}.json`,
        ...z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }),
      },
    ]),
  );
}

/** The files' text, formatted as the repository's prettier formats JSON (so `lint` passes). */
export async function renderJsonSchemas(
  schemas: Record<string, z.ZodType> = EVENT_SCHEMAS,
): Promise<Record<string, string>> {
  // A dev tool, loaded only by the export script and its test.
  const prettier = await import('prettier');
  const options = (await prettier.resolveConfig('docs/schemas/x.json')) ?? {};
  const out: Record<string, string> = {};
  for (const [name, schema] of Object.entries(toJsonSchemas(schemas))) {
    out[name] = await prettier.format(JSON.stringify(schema), { ...options, parser: 'json' });
  }
  return out;
}
