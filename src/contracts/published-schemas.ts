import type { z } from 'zod';
import { EVENT_SCHEMAS } from './json-schemas.js';
import { commandContracts, pmsEventSchemaOf } from './command-contracts.js';

const kebab = (text: string) => text.replace(/[._]/g, '-');

/**
 * The JSON Schema files (docs/schemas/<name>.json) each type publishes: its command
 * (`rental-payment-command`) and the PMS webhook that carries one (`pms-rent-payment-received`).
 */
export function commandTypeSchemas(): Record<string, z.ZodType> {
  return Object.fromEntries(
    commandContracts().flatMap((type) => [
      [`${kebab(type.kind)}-command`, type.schema],
      [`pms-${kebab(type.pmsEventType)}`, pmsEventSchemaOf(type)],
    ]),
  );
}

/** Every published JSON Schema: the events' own and each command type's (scripts/export-schemas.ts). */
export function publishedSchemas(): Record<string, z.ZodType> {
  return { ...EVENT_SCHEMAS, ...commandTypeSchemas() };
}
