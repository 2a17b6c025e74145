import type { AuditEntry } from '../../dead-letters/audit-repository.js';
import type { DeadLetterDetail } from '../../dead-letters/dead-letter-service.js';
import type { DeadLetter, DeadLetterCounts } from '../../dead-letters/dead-letter-repository.js';
import type { GuardStateView } from '../../dead-letters/guard-state-repository.js';
import type { RedriveOutcome } from '../../dead-letters/redrive.js';
import { escapeId } from '../../contracts/command-contracts.js';
import { logicalTopic } from '../../kafka/topics.js';
import type { OutcomeError } from '../../partner/errors.js';
import { terminalSafe } from '../../terminal-text.js';

/** `rentbridge dlq`'s text output: the dead-letter service's view models as tables and lines. */

function cell(text: string | number | null | undefined, width: number): string {
  const s = text == null || text === '' ? '-' : terminalSafe(String(text));
  return s.length > width ? `${s.slice(0, width - 1)}…` : s.padEnd(width);
}

export function formatCounts(counts: DeadLetterCounts): string {
  const list = (m: Record<string, number>) =>
    Object.entries(m)
      .sort((a, b) => b[1] - a[1])
      .map(([k, n]) => `${k} ${n}`)
      .join(', ') || 'none';
  return `${counts.total}${counts.capped ? '+' : ''} matching · by reason: ${list(counts.byReason)} · by code: ${list(counts.byCode)}`;
}

export function formatTable(letters: DeadLetter[], prefix: string): string {
  const header = `${cell('ID', 7)} ${cell('STATE', 14)} ${cell('REASON', 21)} ${cell('CODE', 24)} ${cell('TOPIC', 32)} ${cell('KEY', 16)} ${cell('SOURCE', 12)} ${cell('COMMAND', 24)} LAST FAILURE`;
  // Ids are the PMS's own text: escaped, so a space, a quote or a direction mark shows as itself.
  const id = (v: string | null) => (v == null ? null : escapeId(v));
  const rows = letters.map(
    (l) =>
      `${cell(l.id, 7)} ${cell(l.state, 14)} ${cell(l.reason, 21)} ${cell(l.errorCode, 24)} ${cell(
        logicalTopic(prefix, l.originalTopic ?? l.dlqTopic),
        32,
      )} ${cell(id(l.key), 16)} ${cell(id(l.commandSource), 12)} ${cell(id(l.commandId), 24)} ${l.lastFailureAt?.toISOString() ?? '-'}`,
  );
  return [header, ...rows].join('\n');
}

function prettyValue(value: string): string {
  try {
    return JSON.stringify(JSON.parse(value), null, 2);
  } catch {
    return terminalSafe(value);
  }
}

/** Every line of outside text escaped (an error message, a header); pretty JSON is escaped already. */
const safeLines = (lines: string[]): string[] => lines.map(terminalSafe);

/**
 * What the Partner API said beyond its message (the letter's Partner error, read by the service):
 * the processor's reason of a declined card, the validation errors, the details, the ids of a
 * server error, and any extra field, so ops can tell a tenant why without reading JSON.
 */
export function partnerErrorDetailLines(e: OutcomeError | null | undefined): string[] {
  if (!e) return [];
  const lines: string[] = [];
  if (e.request_id) lines.push(`  request id    ${e.request_id}`);
  if (e.code_missing) lines.push('  code          (none in the answer: read as bad_request)');
  if (e.processor_code || e.processor_decline_code)
    lines.push(`  processor     ${e.processor_code ?? '-'}, decline code ${e.processor_decline_code ?? '-'}`);
  for (const error of e.errors ?? []) lines.push(`  invalid       ${error}`);
  for (const [field, reason] of Object.entries(e.details ?? {}))
    lines.push(`  detail        ${field}: ${typeof reason === 'string' ? reason : JSON.stringify(reason)}`);
  if (e.error_id || e.error_signature)
    lines.push(`  error id      ${e.error_id ?? '-'}  signature ${e.error_signature ?? '-'}`);
  if (e.extra) lines.push(`  extra         ${JSON.stringify(e.extra)}`);
  return lines;
}

function letterLines(letter: DeadLetter, partnerError: OutcomeError | null): string[] {
  return [
    `Dead letter ${letter.id} — ${letter.state}${letter.resolvedBy ? ` by ${letter.resolvedBy} (${letter.resolution ?? ''})` : ''}`,
    `  reason        ${letter.reason ?? '-'}  ${letter.errorCode ?? ''} ${letter.errorStatus ?? ''}`.trimEnd(),
    `  error         ${letter.errorMessage ?? '-'}`,
    ...partnerErrorDetailLines(partnerError),
    `  original      ${letter.originalTopic ?? '-'} [${letter.originalPartition ?? '-'}] @ ${letter.originalOffset ?? '-'}  key ${letter.key ?? '-'}`,
    `  dead letter   ${letter.dlqTopic} [${letter.partition}] @ ${letter.offset}, indexed ${letter.indexedAt.toISOString()}`,
    `  command       ${letter.commandId == null ? '-' : `"${escapeId(letter.commandId)}"`}  source ${letter.commandSource == null ? '-' : `"${escapeId(letter.commandSource)}"`}  type ${letter.commandType ?? '-'}  attempts ${letter.attempts ?? '-'}  consumer group ${letter.consumerGroup ?? '-'}`,
    `  failures      first ${letter.firstFailureAt?.toISOString() ?? '-'}, last ${letter.lastFailureAt?.toISOString() ?? '-'}`,
    `  partner request ids  ${letter.partnerRequestIds.join(', ') || '-'}`,
  ];
}

function guardLines(guard: GuardStateView | null): string[] {
  return [
    'Guard state',
    guard
      ? `  ${guard.state} (attempts ${guard.attempts}, updated ${guard.updatedAt.toISOString()})${guard.lastError ? `  last error ${JSON.stringify(guard.lastError)}` : ''}`
      : '  no row for this command (never tried, or reset by a redrive)',
    ...(guard?.history.length
      ? [
          '  attempts:',
          ...guard.history.map(
            (a) =>
              `    #${a.attempt} ${a.kind} ${a.startedAt.toISOString()} ${a.result ?? ''} ${a.status ?? ''} ${a.code ?? ''} request ${a.requestId}${a.message ? ` — ${a.message}` : ''}`,
          ),
        ]
      : []),
  ];
}

function auditLines(audit: AuditEntry[]): string[] {
  if (!audit.length) return [];
  return [
    '',
    'Audit',
    ...audit.map((a) => `  ${a.at.toISOString()} ${a.actor} ${a.action}${a.reason ? ` — ${a.reason}` : ''}`),
  ];
}

/** `dlq show`: the letter, the Partner error, the guard row and its attempts, headers, value, audit. */
export function formatDetail({ letter, guard, audit, partnerError }: DeadLetterDetail): string {
  return [
    ...safeLines(letterLines(letter, partnerError)),
    '',
    ...safeLines(guardLines(guard)),
    '',
    'Headers',
    ...safeLines(Object.entries(letter.headers).map(([k, v]) => `  ${k}: ${v}`)),
    '',
    'Value',
    prettyValue(letter.value),
    ...(letter.correctedValue ? ['', 'Corrected value', prettyValue(letter.correctedValue)] : []),
    ...safeLines(auditLines(audit)),
  ].join('\n');
}

/** `dlq redrive`: a line per letter, then the totals ("would be" on a dry run). */
export function formatRedrive(outcomes: RedriveOutcome[], dryRun: boolean): string[] {
  const verb = dryRun ? 'would ' : '';
  const lines = outcomes.map((o) => {
    const label = {
      send: `${verb}send`,
      close_applied: `${verb}close as applied`,
      skip: `${verb}skip`,
      invalid: 'invalid',
      not_found: 'not found',
    }[o.action];
    return terminalSafe(`#${o.id} ${label}: ${o.message}`);
  });
  const n = (a: RedriveOutcome['action']) => outcomes.filter((o) => o.action === a).length;
  // "1 would be sent" on a dry run, "1 sent" otherwise.
  const done = dryRun ? 'would be ' : '';
  lines.push(
    `${dryRun ? 'dry run: ' : ''}${n('send')} ${done}sent, ${n('close_applied')} ${done}closed as applied, ${n('skip')} ${done}skipped, ${n('invalid') + n('not_found')} failed`,
  );
  return lines;
}
