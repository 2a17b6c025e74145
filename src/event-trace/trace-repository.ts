import type { Db } from '../db/prisma.js';
import { contractOfTopic, commandSourceOf } from '../contracts/command-contracts.js';
import {
  ID_KINDS,
  identityKey,
  type AttemptRow,
  type AuditRow,
  type CommandRow,
  type DeadLetterRow,
  type IdKind,
  type OutboxRow,
  type ReceiptRow,
  type TraceRows,
  type TraceScope,
  type VersionRow,
} from './trace-rows.js';

export * from './trace-rows.js';

/**
 * The rows `rentbridge trace` reads: everything PostgreSQL holds about one event, found from any
 * of its ids. Round one finds the rows an id names directly; round two follows the links between
 * them (receipt → outbox row, outbox row → command, command → attempts and dead letters, dead
 * letter → audit). Each query is capped; a trace is a look-up, not a report.
 */

const CAP = 200;

const RECEIPT = `SELECT source, webhook_id AS "webhookId", event_type AS "eventType", received_at AS "receivedAt",
  outbox_id::text AS "outboxId" FROM webhook_receipts`;
const OUTBOX = `SELECT id::text, event_id::text AS "eventId", source, topic, key, type, subject, headers,
  created_at AS "createdAt", published_at AS "publishedAt", attempts, last_error AS "lastError",
  kafka_partition AS "kafkaPartition", kafka_offset::text AS "kafkaOffset" FROM outbox`;
const COMMAND = `SELECT source, command_id AS "commandId", command_type AS "commandType",
  request_id_base AS "requestIdBase", target_id AS "targetId", state,
  attempts, last_error AS "lastError", created_at AS "createdAt", updated_at AS "updatedAt",
  finished_at AS "finishedAt" FROM commands`;
const ATTEMPT = `SELECT source, command_type AS "commandType", command_id AS "commandId", attempt, request_id AS "requestId", kind, started_at AS "startedAt",
  finished_at AS "finishedAt", result, status, code, message FROM command_attempts`;
const LETTER = `SELECT id::text, dlq_topic AS "dlqTopic", original_topic AS "originalTopic",
  original_partition AS "originalPartition", original_offset AS "originalOffset", key, reason,
  error_code AS "errorCode", error_status AS "errorStatus", error_message AS "errorMessage",
  command_id AS "commandId", command_source AS "commandSource", command_type AS "commandType",
  partner_request_ids AS "partnerRequestIds", headers, state,
  indexed_at AS "indexedAt", resolved_at AS "resolvedAt", resolved_by AS "resolvedBy", resolution
  FROM dead_letters`;
const VERSION = `SELECT resource, record_id AS "recordId", updated_at AS "updatedAt", via, published_at AS "publishedAt"
  FROM published_versions`;
/** By identity, the attempts' own index: a command id alone leads none of its indexes (issue 42). */
const ATTEMPTS_OF_COMMAND_IDS = `(source, command_type, command_id) IN (
  SELECT source, command_type, command_id FROM commands WHERE command_id = ANY($1::text[]))`;
const AUDIT = `SELECT id::text, at, actor, action, target, reason, details FROM audit_log`;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function uniq(values: Iterable<string | null | undefined>): string[] {
  return [...new Set([...values].filter((v): v is string => typeof v === 'string' && v !== ''))];
}

function byKey<T>(rows: T[], key: (r: T) => string): T[] {
  const seen = new Map<string, T>();
  for (const r of rows) seen.set(key(r), r);
  return [...seen.values()];
}

type Query = <T>(sql: string, ...params: unknown[]) => Promise<T[]>;
type Identity = { source: string; commandType: string; commandId: string };
type MaybeIdentity = { source: string | null; commandType: string | null; commandId: string | null };

/** The identity of the command an outbox row of a command topic carries (its topic names its type). */
function outboxIdentity(o: OutboxRow): MaybeIdentity {
  return {
    source: commandSourceOf(o.source),
    commandType: contractOfTopic(o.topic)?.kind ?? null,
    commandId: o.subject,
  };
}

/** Round one's rows: those the id names, kept to the picked kind when there is one. */
interface NamedRows {
  matchedAs: IdKind[];
  receipts: ReceiptRow[];
  outbox: OutboxRow[];
  commands: CommandRow[];
  attempts: Identity[];
  letters: DeadLetterRow[];
  versions: VersionRow[];
}

/** Which kind of id each round-one row was found by. */
function kindsOfRows(id: string, commandTopicSet: Set<string>) {
  return {
    receipt: (): IdKind[] => ['webhook'],
    outbox: (o: OutboxRow): IdKind[] => [
      ...(o.eventId === id ? (['event'] as const) : []),
      ...(o.headers['webhook-id'] === id ? (['webhook'] as const) : []),
      ...(o.subject === id && commandTopicSet.has(o.topic) ? (['command'] as const) : []),
      ...(o.key === id || (o.subject === id && !commandTopicSet.has(o.topic)) ? (['record'] as const) : []),
    ],
    command: (c: CommandRow): IdKind[] => [
      ...(c.commandId === id || c.requestIdBase === id ? (['command'] as const) : []),
      ...(c.targetId === id ? (['record'] as const) : []),
    ],
    attempt: (): IdKind[] => ['request'],
    letter: (l: DeadLetterRow): IdKind[] => [
      ...(l.id === id ? (['dead-letter'] as const) : []),
      ...(l.commandId === id ? (['command'] as const) : []),
      ...(l.key === id ? (['record'] as const) : []),
      ...(l.partnerRequestIds.includes(id) ? (['request'] as const) : []),
      ...(l.headers['webhook-id'] === id ? (['webhook'] as const) : []),
      ...(l.headers.ce_id === id ? (['event'] as const) : []),
    ],
    version: (): IdKind[] => ['record'],
  };
}

/** Round one: rows the id names; with `as`, only those it names as that kind. */
async function readNamedRows(
  q: Query,
  id: string,
  commandTopicSet: Set<string>,
  as: IdKind | undefined,
): Promise<NamedRows> {
  const uuid = UUID.test(id) ? id : null;
  const numeric = /^\d{1,18}$/.test(id) ? id : null;
  const [receipts, outbox, commands, attempts, letters, versions] = await Promise.all([
    q<ReceiptRow>(`${RECEIPT} WHERE webhook_id = $1`, id),
    q<OutboxRow>(
      `${OUTBOX} WHERE event_id = $2::uuid OR subject = $1 OR key = $1 OR headers->>'webhook-id' = $1 ORDER BY id`,
      id,
      uuid,
    ),
    q<CommandRow>(`${COMMAND} WHERE command_id = $1 OR target_id = $1 OR request_id_base = $1`, id),
    q<Identity>(
      `SELECT DISTINCT source, command_type AS "commandType", command_id AS "commandId"
         FROM command_attempts WHERE request_id = $1`,
      id,
    ),
    q<DeadLetterRow>(
      // Each arm an index lookup (a BitmapOr): `@>` is what the GIN index of request ids serves,
      // the headers have expression indexes (issue 42).
      `${LETTER} WHERE id = $2::bigint OR command_id = $1 OR key = $1 OR partner_request_ids @> ARRAY[$1::text]
         OR headers->>'webhook-id' = $1 OR headers->>'ce_id' = $1 ORDER BY id`,
      id,
      numeric,
    ),
    q<VersionRow>(`${VERSION} WHERE record_id = $1 ORDER BY published_at`, id),
  ]);
  const kindsOf = kindsOfRows(id, commandTopicSet);
  const matched = new Set<IdKind>([
    ...receipts.flatMap(kindsOf.receipt),
    ...outbox.flatMap(kindsOf.outbox),
    ...commands.flatMap(kindsOf.command),
    ...attempts.flatMap(kindsOf.attempt),
    ...letters.flatMap(kindsOf.letter),
    ...versions.flatMap(kindsOf.version),
  ]);
  const keep = <T>(rows: T[], kinds: (r: T) => IdKind[]) =>
    as ? rows.filter((r) => kinds(r).includes(as)) : rows;
  return {
    matchedAs: ID_KINDS.filter((k) => matched.has(k)),
    receipts: keep(receipts, kindsOf.receipt),
    outbox: keep(outbox, kindsOf.outbox),
    commands: keep(commands, kindsOf.command),
    attempts: keep(attempts, kindsOf.attempt),
    letters: keep(letters, kindsOf.letter),
    versions: keep(versions, kindsOf.version),
  };
}

/** The command identities round one names (in scope), and the command ids to fetch by. */
function commandsNamed(
  first: NamedRows,
  commandTopicSet: Set<string>,
  inScope: (c: { source: string | null; commandType: string | null }) => boolean,
): { identities: Map<string, Identity>; commandIds: string[] } {
  const identities = new Map<string, Identity>();
  const add = (c: MaybeIdentity) => {
    if (c.source == null || c.commandType == null || !c.commandId || !inScope(c)) return;
    const identity = { source: c.source, commandType: c.commandType, commandId: c.commandId };
    identities.set(identityKey(identity), identity);
  };
  first.commands.forEach(add);
  first.attempts.forEach(add);
  first.letters.forEach((l) =>
    add({ source: l.commandSource, commandType: l.commandType, commandId: l.commandId }),
  );
  // A command message names its identity too (its CloudEvent source, its topic's type, its id):
  // traced by its webhook id, beta's payment 42 is not acme's.
  first.outbox.filter((o) => commandTopicSet.has(o.topic)).forEach((o) => add(outboxIdentity(o)));
  const commandIds = uniq([
    ...[...identities.values()].map((c) => c.commandId),
    ...first.letters
      .filter((l) => l.commandSource == null && inScope({ source: null, commandType: null }))
      .map((l) => l.commandId),
    ...first.outbox
      .filter((o) => commandTopicSet.has(o.topic) && inScope(outboxIdentity(o)))
      .map((o) => o.subject),
  ]);
  return { identities, commandIds };
}

/**
 * An audit row found by the command id its details name: kept when it is about one of the traced
 * commands (its details name their source and type), or names no identity (rows from before them).
 */
function auditOfCommands(a: AuditRow, commands: Identity[]): boolean {
  const d = a.details;
  if (typeof d.commandSource !== 'string' && typeof d.commandType !== 'string') return true;
  return commands.some(
    (c) =>
      c.commandId === d.commandId &&
      (d.commandSource == null || d.commandSource === c.source) &&
      (d.commandType == null || d.commandType === c.commandType),
  );
}

/** Round two of a trace: the rows linked to what the id named (receipts, outbox rows, commands, attempts, letters). */
function readLinked(
  q: Query,
  webhookIds: string[],
  outboxIds: string[],
  commandIds: string[],
  commandTopicSet: Set<string>,
) {
  return Promise.all([
    webhookIds.length ? q<ReceiptRow>(`${RECEIPT} WHERE webhook_id = ANY($1::text[])`, webhookIds) : [],
    outboxIds.length || webhookIds.length || commandIds.length
      ? q<OutboxRow>(
          `${OUTBOX} WHERE id = ANY($1::bigint[]) OR headers->>'webhook-id' = ANY($2::text[])
             OR (subject = ANY($3::text[]) AND topic = ANY($4::text[])) ORDER BY id`,
          outboxIds,
          webhookIds,
          commandIds,
          [...commandTopicSet],
        )
      : [],
    commandIds.length ? q<CommandRow>(`${COMMAND} WHERE command_id = ANY($1::text[])`, commandIds) : [],
    commandIds.length
      ? q<AttemptRow>(`${ATTEMPT} WHERE ${ATTEMPTS_OF_COMMAND_IDS} ORDER BY id`, commandIds)
      : [],
    commandIds.length
      ? q<DeadLetterRow>(`${LETTER} WHERE command_id = ANY($1::text[]) ORDER BY id`, commandIds)
      : [],
  ]);
}

/** The audit entries of a trace's dead letters and commands. */
async function readAudit(q: Query, deadLetters: DeadLetterRow[], commands: CommandRow[]) {
  const targets = deadLetters.map((l) => `dead_letter:${l.id}`);
  const auditIds = uniq(commands.map((c) => c.commandId));
  return (
    targets.length || auditIds.length
      ? await q<AuditRow>(
          `${AUDIT} WHERE target = ANY($1::text[]) OR details->>'commandId' = ANY($2::text[]) ORDER BY at, id`,
          targets,
          auditIds,
        )
      : []
  ).filter((a) => targets.includes(a.target) || auditOfCommands(a, commands));
}

export async function readTraceRows(
  db: Db,
  id: string,
  commandTopics: string[],
  scope: TraceScope = {},
  /** Follow only rows the id names as this kind (the user's pick when it matched several). */
  as?: IdKind,
): Promise<TraceRows> {
  const q: Query = <T>(sql: string, ...params: unknown[]) =>
    db.$queryRawUnsafe<T[]>(`${sql} LIMIT ${CAP}`, ...params);
  const inScope = (c: { source: string | null; commandType: string | null }) =>
    (scope.source === undefined || c.source === scope.source) &&
    (scope.commandType === undefined || c.commandType === scope.commandType);
  const commandTopicSet = new Set(commandTopics);
  const named = await readNamedRows(q, id, commandTopicSet, as);
  // A scope (`--source` / `--type`) drops the command messages and letters of other commands
  // before their links are followed: their webhooks are another command's trail.
  const first: NamedRows = {
    ...named,
    outbox: named.outbox.filter((o) => !commandTopicSet.has(o.topic) || inScope(outboxIdentity(o))),
    letters: named.letters.filter(
      (l) =>
        (l.commandSource == null || scope.source === undefined || l.commandSource === scope.source) &&
        (l.commandType == null || scope.commandType === undefined || l.commandType === scope.commandType),
    ),
  };

  // Round two: follow the links, by identity (two commands may share an id).
  const webhookIds = uniq([
    ...first.receipts.map((r) => r.webhookId),
    ...first.outbox.map((o) => o.headers['webhook-id']),
    ...first.letters.map((l) => l.headers['webhook-id']),
  ]);
  const outboxIds = uniq(first.receipts.map((r) => r.outboxId));
  const { identities, commandIds } = commandsNamed(first, commandTopicSet, inScope);
  const linked = await readLinked(q, webhookIds, outboxIds, commandIds, commandTopicSet);
  const [receipts2, outbox2, commands2, attempts2, letters2] = linked;
  // Fetched by command id; kept only when they are of an identity this trace follows (a command
  // of another source that shares the id is another command's trail).
  const followed = (c: MaybeIdentity) =>
    c.source == null || identities.size === 0 || identities.has(identityKey(c as never));
  const commands = byKey(
    [...first.commands.filter(inScope), ...commands2.filter(inScope)],
    identityKey,
  ).filter(followed);
  const attempts = attempts2.filter(inScope).filter(followed);
  const deadLetters = byKey(
    [...first.letters, ...letters2].filter((l) =>
      followed({ source: l.commandSource, commandType: l.commandType, commandId: l.commandId }),
    ),
    (l) => l.id,
  );
  const audit = await readAudit(q, deadLetters, commands);
  // Found from the command side (command or request id): the receipts of those outbox rows too.
  // A command's outbox row is kept when it is of an identity followed (or, with none, in scope):
  // acme's payment 42 is not acme's decision 42, nor beta's payment 42.
  const outbox = byKey([...first.outbox, ...outbox2], (o) => o.id).filter((o) => {
    if (!commandTopicSet.has(o.topic)) return true;
    const identity = outboxIdentity(o);
    return identities.size === 0 ? inScope(identity) : followed(identity);
  });
  const known = new Set([...first.receipts, ...receipts2].map((r) => r.outboxId));
  const unseen = outbox.map((o) => o.id).filter((id) => !known.has(id));
  const receipts3 = unseen.length
    ? await q<ReceiptRow>(`${RECEIPT} WHERE outbox_id = ANY($1::bigint[])`, unseen)
    : [];
  const receipts = byKey(
    [...first.receipts, ...receipts2, ...receipts3],
    (r) => `${r.source}|${r.webhookId}`,
  );
  return {
    matchedAs: first.matchedAs,
    receipts,
    outbox,
    commands,
    attempts,
    deadLetters,
    versions: first.versions,
    audit,
    outboxIdsNamed: uniq(receipts.map((r) => r.outboxId)),
  };
}
