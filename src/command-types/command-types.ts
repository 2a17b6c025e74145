import { commandContracts, contractByName, contractOfKind } from '../contracts/command-contracts.js';
import { applicationDecisions } from './application-decisions/application-decisions.js';
import type { AnyCommandType } from './command-type.js';
import { customerRegistrations } from './customer-registrations/customer-registrations.js';
import { enrollments } from './enrollments/enrollments.js';
import { rentalPayments } from './rental-payments/rental-payments.js';

export type { AnyCommandType, CommandType } from './command-type.js';

/**
 * The consumer's side of the list of command types (docs/decisions/030-command-type-table.md,
 * 040): each entry of src/contracts/command-contracts.ts with its behaviour, a module of its own
 * here. Adding a type is its contract entry and its module (docs/adding-a-command-type.md).
 */
const ROWS = new Map<string, AnyCommandType>(
  [applicationDecisions, rentalPayments, customerRegistrations, enrollments].map((t) => [t.kind, t]),
);

/** A registered command type's row (after registerCommandContract): before it is consumed. */
export function registerCommandType(type: AnyCommandType): void {
  if (contractOfKind(type.kind) === undefined) throw new Error(`command type ${type.kind}: no contract`);
  ROWS.set(type.kind, type);
}

function rowOf(kind: string | undefined): AnyCommandType | undefined {
  if (kind === undefined) return undefined;
  const row = ROWS.get(kind);
  if (!row) throw new Error(`command type ${kind} has a contract but no behaviour`);
  return row;
}

/** The consumers' names (`rentbridge consumer <name>`), in the list's order. */
export function commandTypeNames(): string[] {
  return commandContracts().map((c) => c.name);
}

export const commandTypeByName = (name: string) => rowOf(contractByName(name)?.kind);
export const commandTypeOfKind = (kind: string) => rowOf(contractOfKind(kind)?.kind);
