import type { Prisma } from '@prisma/client';
import type { Footprint, PersonCommand } from './erasure-find.js';
import { scrubJson, scrubJsonText, scrubText } from './scrub.js';

type Tx = Prisma.TransactionClient;

/**
 * The erasure of the rows about the person's commands (docs/privacy.md): a final command keeps its
 * identity, state and times, and loses its payload, snapshot and outcome's personal fields; a
 * command not yet final keeps what its write needs (named in the receipt, erased by the next
 * erasure of the same e-mail once final). Each function answers how many rows it changed; all of
 * them run in the caller's transaction, which a dry run rolls back.
 */

const json = (v: unknown) => JSON.stringify(v ?? null);
const asInput = (v: unknown) => (v === null ? null : JSON.stringify(v));

/** Column arrays of the command identities, for unnest(). */
function identities(commands: PersonCommand[]) {
  return {
    sources: commands.map((c) => c.source),
    types: commands.map((c) => c.commandType),
    ids: commands.map((c) => c.commandId),
  };
}

export async function eraseCommands(tx: Tx, fp: Footprint): Promise<number> {
  const final = fp.commands.filter((c) => c.final);
  if (final.length === 0) return 0;
  const { sources, types, ids } = identities(final);
  const rows = await tx.$queryRaw<
    {
      source: string;
      command_type: string;
      command_id: string;
      target_id: string;
      payload: unknown;
      snapshot: unknown;
      outcome: unknown;
      last_error: unknown;
    }[]
  >`
    SELECT c.source, c.command_type, c.command_id, c.target_id, c.payload, c.snapshot, c.outcome, c.last_error
      FROM commands c JOIN unnest(${sources}::text[], ${types}::text[], ${ids}::text[]) AS v(s, t, i)
        ON c.source = v.s AND c.command_type = v.t AND c.command_id = v.i
     FOR UPDATE OF c`;
  for (const r of rows) {
    const target = fp.emailKeys.includes(r.target_id) ? fp.standIn : r.target_id;
    await tx.$executeRaw`
      UPDATE commands SET target_id = ${target},
             payload = ${json(scrubJson(r.payload, fp.needles))}::jsonb,
             snapshot = ${asInput(scrubJson(r.snapshot, fp.needles))}::jsonb,
             outcome = ${asInput(scrubJson(r.outcome, fp.needles))}::jsonb,
             last_error = ${asInput(scrubJson(r.last_error, fp.needles))}::jsonb
       WHERE source = ${r.source} AND command_type = ${r.command_type} AND command_id = ${r.command_id}`;
  }
  return rows.length;
}

/** The guard's attempts: only an error message can carry a value (the platform's answer). */
export async function eraseAttempts(tx: Tx, fp: Footprint): Promise<number> {
  const { sources, types, ids } = identities(fp.commands.filter((c) => c.final));
  if (ids.length === 0) return 0;
  const rows = await tx.$queryRaw<{ id: bigint; message: string }[]>`
    SELECT a.id, a.message FROM command_attempts a
      JOIN unnest(${sources}::text[], ${types}::text[], ${ids}::text[]) AS v(s, t, i)
        ON a.source = v.s AND a.command_type = v.t AND a.command_id = v.i
     WHERE a.message IS NOT NULL`;
  let changed = 0;
  for (const r of rows) {
    const message = scrubText(r.message, fp.needles);
    if (message === r.message) continue;
    await tx.$executeRaw`UPDATE command_attempts SET message = ${message} WHERE id = ${r.id}`;
    changed += 1;
  }
  return changed;
}

const isPersons = (fp: Footprint, source: string | null, type: string | null, id: string | null) =>
  fp.commands.some(
    (c) =>
      c.commandId === id &&
      (type === null || c.commandType === type) &&
      (source === null || c.source === source),
  );

/**
 * Dead letters keyed by one of the person's ids or of one of their commands: the message, its
 * correction and the error text scrubbed, an e-mail key replaced; an open letter is closed as
 * discarded (there is nothing left to redrive). Answers the letters and their DLQ topics.
 */
export async function eraseDeadLetters(
  tx: Tx,
  fp: Footprint,
): Promise<{ rows: number; topics: Map<string, number>; targets: string[] }> {
  const keys = [...fp.emailKeys, ...fp.customerIds, ...fp.enrollmentIds, ...fp.applicationIds];
  const rows = await tx.$queryRaw<
    {
      id: bigint;
      dlq_topic: string;
      key: string | null;
      value: string;
      corrected_value: string | null;
      error_message: string | null;
      command_id: string | null;
      command_source: string | null;
      command_type: string | null;
      state: string;
    }[]
  >`
    SELECT id, dlq_topic, key, value, corrected_value, error_message, command_id, command_source, command_type, state
      FROM dead_letters
     WHERE key = ANY(${keys}::text[]) OR command_id = ANY(${fp.commands.map((c) => c.commandId)}::text[])`;
  const topics = new Map<string, number>();
  const targets: string[] = [];
  let changed = 0;
  for (const r of rows) {
    if (
      !(r.key !== null && keys.includes(r.key)) &&
      !isPersons(fp, r.command_source, r.command_type, r.command_id)
    )
      continue;
    topics.set(r.dlq_topic, (topics.get(r.dlq_topic) ?? 0) + 1);
    targets.push(`dead_letter:${r.id}`);
    const open = r.state === 'open';
    await tx.$executeRaw`
      UPDATE dead_letters
         SET key = ${r.key !== null && fp.emailKeys.includes(r.key) ? fp.standIn : r.key},
             value = ${scrubJsonText(r.value, fp.needles)},
             corrected_value = ${r.corrected_value === null ? null : scrubJsonText(r.corrected_value, fp.needles)},
             error_message = ${r.error_message === null ? null : scrubText(r.error_message, fp.needles)},
             state = ${open ? 'discarded' : r.state},
             resolved_at = CASE WHEN ${open} THEN now() ELSE resolved_at END,
             resolved_by = CASE WHEN ${open} THEN 'erasure' ELSE resolved_by END,
             resolution = CASE WHEN ${open} THEN 'erased on request' ELSE resolution END
       WHERE id = ${r.id}`;
    changed += 1;
  }
  return { rows: changed, topics, targets };
}

/**
 * Outcome callbacks of the person's commands: a delivered or dead one loses its body's personal
 * fields; a pending one is still to be POSTed (kept, counted as pending). Their attempts' errors too.
 */
export async function eraseCallbacks(
  tx: Tx,
  fp: Footprint,
): Promise<{ deliveries: number; attempts: number; pending: number; targets: string[] }> {
  const rows = await tx.$queryRaw<
    {
      id: bigint;
      source: string;
      command_type: string;
      command_id: string;
      state: string;
      payload: string;
      last_error: string | null;
    }[]
  >`
    SELECT id, source, command_type, command_id, state, payload, last_error FROM callback_deliveries
     WHERE command_id = ANY(${fp.commands.map((c) => c.commandId)}::text[])`;
  const mine = rows.filter((r) => isPersons(fp, r.source, r.command_type, r.command_id));
  const done = mine.filter((r) => r.state !== 'pending');
  for (const r of done) {
    await tx.$executeRaw`
      UPDATE callback_deliveries
         SET payload = ${scrubJsonText(r.payload, fp.needles)},
             last_error = ${r.last_error === null ? null : scrubText(r.last_error, fp.needles)}
       WHERE id = ${r.id}`;
  }
  const attempts = await tx.$queryRaw<{ id: bigint; error: string }[]>`
    SELECT id, error FROM callback_attempts
     WHERE delivery_id = ANY(${done.map((r) => r.id)}::bigint[]) AND error IS NOT NULL`;
  let changedAttempts = 0;
  for (const a of attempts) {
    const error = scrubText(a.error, fp.needles);
    if (error === a.error) continue;
    await tx.$executeRaw`UPDATE callback_attempts SET error = ${error} WHERE id = ${a.id}`;
    changedAttempts += 1;
  }
  return {
    deliveries: done.length,
    attempts: changedAttempts,
    pending: mine.length - done.length,
    targets: mine.map((r) => `callback_delivery:${r.id}`),
  };
}

/** Reconciliation items of the person's commands or records: evidence and reason scrubbed. */
export async function eraseReconciliation(tx: Tx, fp: Footprint): Promise<number> {
  const { sources, types, ids } = identities(fp.commands);
  const keys = [...fp.emailKeys, ...fp.customerIds, ...fp.enrollmentIds, ...fp.applicationIds];
  const rows = await tx.$queryRaw<{ id: bigint; target_id: string; reason: string; evidence: unknown }[]>`
    SELECT i.id, i.target_id, i.reason, i.evidence FROM reconciliation_items i
      JOIN unnest(${sources}::text[], ${types}::text[], ${ids}::text[]) AS v(s, t, c)
        ON i.source = v.s AND i.command_type = v.t AND i.command_id = v.c
    UNION
    SELECT id, target_id, reason, evidence FROM reconciliation_items WHERE target_id = ANY(${keys}::text[])`;
  for (const r of rows) {
    await tx.$executeRaw`
      UPDATE reconciliation_items
         SET target_id = ${fp.emailKeys.includes(r.target_id) ? fp.standIn : r.target_id},
             reason = ${scrubText(r.reason, fp.needles)},
             evidence = ${json(scrubJson(r.evidence, fp.needles))}::jsonb
       WHERE id = ${r.id}`;
  }
  return rows.length;
}

/**
 * Audit entries about the person's commands, dead letters or callbacks: their details emptied and
 * marked erased; the digest the chain covers stays (decision 053), so `audit verify` still holds.
 * An entry is the person's by its target (a dead letter, a callback, `command:source/type/id`) or
 * by the (source, command id) its details name: a command id is unique per source only, so another
 * source's entry with the same id keeps its details.
 */
export async function eraseAuditDetails(tx: Tx, fp: Footprint, targets: string[]): Promise<number> {
  const { sources, ids } = identities(fp.commands);
  const commandTargets = fp.commands.map((c) => `command:${c.source}/${c.commandType}/${c.commandId}`);
  const erased = await tx.$executeRaw`
    UPDATE audit_log SET details = ${json({ erased: true })}::jsonb, details_erased_at = now()
     WHERE details_erased_at IS NULL
       AND (target = ANY(${[...targets, ...commandTargets]}::text[])
            OR EXISTS (SELECT 1 FROM unnest(${sources}::text[], ${ids}::text[]) AS v(s, i)
                        WHERE details->>'commandId' = v.i
                          AND coalesce(details->>'source', details->>'commandSource', details->>'command_source') = v.s))`;
  return erased;
}
