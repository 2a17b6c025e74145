import type { KafkaMessage } from 'kafkajs';
import { commandTypeOfKind } from '../command-types/command-types.js';
import { destinationsOf } from '../command-consumer/outcome-events.js';
import { createResultPublisher, type ResultPublisher } from '../command-consumer/publish-result.js';
import type { Db } from '../db/prisma.js';
import {
  commandSourceOf,
  pmsCloudEventSource,
  type CommandIdentity,
} from '../contracts/command-contracts.js';
import type { CommandKind } from '../contracts/outcomes.js';
import { writeAudit } from '../dead-letters/audit-repository.js';
import { redriveDeadLetter } from '../dead-letters/redrive.js';
import type { CommandRecord, CommandRepository, GuardPartner } from '../guard/index.js';
import type { Completion } from '../command-types/command-type.js';
import type { SharedProducer } from '../kafka/shared-producer.js';
import type { Logger } from '../logger.js';
import type { KeyUse } from '../partner/source-partners.js';
import type { ReconcileRepository } from './reconcile-repository.js';
import type { ReconcileItem } from './reconcile-types.js';

/**
 * What a pass does with a parked (`unverified`) command once the platform's records settle it:
 *
 * - `settled_applied`: the guard's row goes `unverified` → `applied` (the read-back's `applied`,
 *   read later), its outcome is published through the consumers' own outcome publisher (same
 *   CloudEvent, same ids, so callbacks follow from it as from any outcome), and an audit entry says
 *   which run and what evidence.
 * - `settled_absent`: nothing is written to the Partner API here. The item says the command is safe
 *   to redrive; with RECONCILE_REDRIVE_ABSENT=true the row goes `unverified` → `pending` (proven
 *   not applied) and the command's open dead letter is redriven, so the consumer writes it once
 *   more through the guard. Without an indexed dead letter nothing changes.
 */

export interface SettleDeps {
  db: Db;
  commands: CommandRepository;
  reconcile: ReconcileRepository;
  producer: SharedProducer;
  logger: Logger;
  topicPrefix: string;
  redriveAbsent: boolean;
  /** Which key acts for a source (the outcome's `Acting`). */
  keyOf(source: string): KeyUse;
  /** The client acting for a source: the command type's step after the write reads with it. */
  partnerOf(source: string): GuardPartner;
}

const ACTOR = 'reconcile';

/** A stand-in for the message a consumer publishes an outcome for: none, the command came long ago. */
function noOrigin(key: string): { partition: number; message: KafkaMessage } {
  return {
    partition: -1,
    message: {
      key: Buffer.from(key),
      value: null,
      timestamp: String(Date.now()),
      attributes: 0,
      offset: '-1',
      headers: {},
    } as KafkaMessage,
  };
}

/**
 * The CloudEvent source the command came with, as the consumer knows it: a follow-up command (a
 * registration's enrollment) is published under it, so it keeps the command's source.
 */
export function ceSourceOf(source: string): string {
  const pms = pmsCloudEventSource(source);
  return commandSourceOf(pms) === source ? pms : source;
}

export function createSettler(deps: SettleDeps) {
  const publishers = new Map<string, ResultPublisher>();
  const publisherOf = (kind: string) => {
    let p = publishers.get(kind);
    const type = commandTypeOfKind(kind);
    if (!type) throw new Error(`no command type ${kind}`);
    if (!p) {
      const dest = destinationsOf(type, deps.topicPrefix, `${deps.topicPrefix}rentbridge.reconcile`);
      p = createResultPublisher({
        dest,
        producer: deps.producer,
        repository: deps.commands,
        logger: deps.logger,
      });
      publishers.set(kind, p);
    }
    return p;
  };

  const identityOf = (item: ReconcileItem): CommandIdentity => ({
    source: item.source!,
    commandType: item.commandType as CommandKind,
    commandId: item.commandId!,
  });

  /**
   * What the command type adds once the command is final (a registration's Partner customer id
   * and, with `enroll: true`, its enrollment command; an enrollment's id), exactly as the consumer
   * computes it: the type's own step, with the source's key, its reads `<base>.rs<n>` (reconcile steps).
   */
  async function completionOf(record: CommandRecord): Promise<Completion> {
    const type = commandTypeOfKind(record.commandType);
    if (!type?.complete) return {};
    let steps = 0;
    const identity = { source: record.source, commandType: record.commandType, commandId: record.commandId };
    return type.complete(record.payload, record, {
      identity: identity as CommandIdentity,
      partner: deps.partnerOf(record.source),
      repository: deps.commands,
      logger: deps.logger.child({ commandId: record.commandId, commandSource: record.source }),
      nextRequestId: () => `${record.requestIdBase}.rs${++steps}`,
    });
  }

  async function audit(item: ReconcileItem, runId: number, what: string) {
    await writeAudit(deps.db, {
      actor: ACTOR,
      action: 'reconcile_settle',
      target: `command:${item.source}/${item.commandType}/${item.commandId}`,
      reason: item.reason,
      details: { run: runId, verdict: item.verdict, result: what, evidence: item.evidence },
    });
  }

  /** `unverified` → `applied`, its outcome published; answers what was done. */
  async function settleApplied(item: ReconcileItem, runId: number): Promise<string> {
    const identity = identityOf(item);
    const record = await deps.commands.settleUnverified(identity, 'applied', {
      attempt: 0,
      requestId: `reconcile.run-${runId}`,
      kind: 'read_back',
      result: 'applied',
      message: `reconciliation run ${runId}: ${item.reason}`,
    });
    if (!record) return 'the command changed meanwhile: left as it is';
    // Attempt numbers of steps are the write's they follow: this one follows the last write.
    const acting = {
      source: record.source,
      ceSource: ceSourceOf(record.source),
      key: deps.keyOf(record.source),
    };
    const completion = await completionOf(record);
    await publisherOf(item.commandType).publishResult(
      noOrigin(record.targetId),
      record,
      false,
      completion,
      acting,
    );
    await audit(item, runId, 'applied: outcome published');
    deps.logger.info(
      { commandId: record.commandId, source: record.source, runId },
      'unverified command settled applied',
    );
    return 'applied: outcome published';
  }

  /** Safe to redrive; redriven when configured and a dead letter is there to redrive. */
  async function settleAbsent(item: ReconcileItem, runId: number): Promise<string> {
    if (!deps.redriveAbsent) return 'safe to redrive (RECONCILE_REDRIVE_ABSENT is off)';
    const identity = identityOf(item);
    const letter = await deps.reconcile.openDeadLetter(identity);
    if (letter == null) return 'safe to redrive, but no open dead letter is indexed for it: not redriven';
    const record = await deps.commands.settleUnverified(identity, 'pending', {
      attempt: 0,
      requestId: `reconcile.run-${runId}`,
      kind: 'read_back',
      result: 'not_applied',
      message: `reconciliation run ${runId}: ${item.reason}`,
    });
    if (!record) return 'the command changed meanwhile: left as it is';
    const outcome = await redriveDeadLetter(
      {
        db: deps.db,
        producer: () => deps.producer.get(),
        topicPrefix: deps.topicPrefix,
        logger: deps.logger,
      },
      letter,
      { actor: ACTOR, reason: `reconciliation run ${runId}: ${item.reason}` },
    );
    const what = `redriven (dead letter ${letter}: ${outcome.action})`;
    await audit(item, runId, what);
    return what;
  }

  return { settleApplied, settleAbsent };
}

export type Settler = ReturnType<typeof createSettler>;
