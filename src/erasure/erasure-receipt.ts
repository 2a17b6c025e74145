import { commandContracts } from '../contracts/command-contracts.js';
import { keptAtMostMs, topicKind, type TopicSettings } from '../kafka/topic-settings.js';
import { TOPICS } from '../kafka/topics.js';
import type { PersonCommand } from './erasure-find.js';

/**
 * What an erasure did (or, dry, would do): per table the rows erased, per topic the tombstones
 * published and the copies that may remain with the date the topic's retention (or, on a
 * changelog, its compaction) removes them, and the commands not yet final (kept for their write,
 * erased by the next `rentbridge erase` of the same e-mail once final). No personal value: the
 * e-mail only as its digest.
 */
export interface ErasureReceipt {
  email_digest: string;
  dry_run: boolean;
  at: string;
  customers: number;
  enrollments: number;
  applications: number;
  tables: Record<string, number>;
  topics: Array<{ topic: string; tombstones: number; copies: number; removed_by: string | null }>;
  pending: Array<{ source: string; command_type: string; command_id: string; state: string }>;
  pending_rows: Record<string, number>;
}

/**
 * The topics that may hold a copy: each of the person's commands' command and outcome topics, the
 * DLQ topics of their dead letters, the changelogs of their records, inbound.unrouted when one of
 * its events carried the e-mail. The date is the latest: now
 * plus what the topic keeps (as rentbridge configures it: `rentbridge topics` shows a topic
 * configured otherwise).
 */
export function topicLines(
  at: Date,
  settings: TopicSettings,
  parts: {
    commands: PersonCommand[];
    deadLetterTopics: Map<string, number>;
    tombstones: Map<string, number>;
    reconciled: number;
    /** Rows of inbound.unrouted that carried the e-mail (Kafka may hold a copy until retention). */
    unrouted: number;
  },
): ErasureReceipt['topics'] {
  const copies = new Map<string, number>();
  const add = (topic: string, n = 1) => copies.set(topic, (copies.get(topic) ?? 0) + n);
  const contracts = new Map(commandContracts().map((c) => [c.kind, c]));
  for (const c of parts.commands) {
    const contract = contracts.get(c.commandType);
    if (!contract) continue;
    add(contract.topic);
    if (c.final) add(contract.outcomeTopic);
  }
  for (const [topic, n] of parts.deadLetterTopics) add(topic, n);
  for (const [topic, n] of parts.tombstones) if (n > 0) add(topic, n);
  if (parts.reconciled > 0) add(TOPICS.reconciliationReports, parts.reconciled);
  if (parts.unrouted > 0) add(TOPICS.unrouted, parts.unrouted);
  return [...copies.entries()]
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([topic, n]) => {
      const kept = keptAtMostMs(topicKind(topic), settings);
      return {
        topic,
        tombstones: parts.tombstones.get(topic) ?? 0,
        copies: n,
        removed_by: kept < 0 ? null : new Date(at.getTime() + kept).toISOString(),
      };
    });
}

/** The receipt as a table for a terminal. */
export function formatReceipt(r: ErasureReceipt): string {
  const lines = [
    `${r.dry_run ? 'Dry run: nothing changed. Would erase' : 'Erased'} the person with e-mail digest ${r.email_digest.slice(0, 16)}… at ${r.at}`,
    `Partner records: ${r.customers} customer(s), ${r.enrollments} enrollment(s), ${r.applications} application(s)`,
    '',
    'TABLE                      ROWS',
    ...Object.entries(r.tables).map(([t, n]) => `${t.padEnd(26)} ${n}`),
    '',
    'TOPIC                                   TOMBSTONES  COPIES  REMOVED BY',
    ...r.topics.map(
      (t) =>
        `${t.topic.padEnd(39)} ${String(t.tombstones).padStart(10)}  ${String(t.copies).padStart(6)}  ${t.removed_by ?? 'never (retention unbounded)'}`,
    ),
  ];
  if (r.pending.length > 0) {
    lines.push('', 'Not yet final, kept for their write (run this erase again once they are final):');
    for (const p of r.pending) lines.push(`  ${p.source}/${p.command_type}/${p.command_id} (${p.state})`);
  }
  const pendingRows = Object.entries(r.pending_rows).filter(([, n]) => n > 0);
  if (pendingRows.length > 0) {
    lines.push(
      '',
      `Kept until delivered or published: ${pendingRows.map(([t, n]) => `${t} ${n}`).join(', ')}`,
    );
  }
  return `${lines.join('\n')}\n`;
}
