import { setTimeout as sleep } from 'node:timers/promises';
import { applicationDecisionReadBack } from '../command-types/application-decisions/application-decision-read-back.js';
import type { GuardPartner } from '../guard/read-backs/partner-port.js';
import { findRecord, sameTime, type ReadContext } from '../guard/read-backs/read-back.js';
import {
  paymentsOn,
  rentalPaymentReadBack,
} from '../command-types/rental-payments/rental-payment-read-back.js';
import { PAYMENT_VISIBLE_ON_ENROLLMENT, REPORT_MOVES_UPDATED_AT } from '../partner/assumptions.js';
import { day } from './probe-types.js';

/**
 * The probe's two guarded writes, each made once and observed by the guard's own read-back rule
 * (src/guard/*-read-back.ts) through the guard's own Partner API port: several assumptions are
 * read off one write (the payment: visible, updated_at moved, within the bound).
 */
export interface WriteDeps {
  partner: GuardPartner;
  /** The X-Request-Ids the partner answered with so far (the evidence is a slice of them). */
  seen: readonly string[];
  progress(line: string): void;
  pollMs: number;
  /** How long a write is watched before it is called not visible: twice the bound plus 2 s. */
  waitLimit: number;
}

export interface WriteSeen {
  /** The write was refused or failed: why. */
  writeError: string | null;
  /** How long after the send the guard's read-back saw it applied; null if it never did. */
  visibleMs: number | null;
  /** The read-back's reason for an answer other than applied, if it gave one. */
  missing: string | null;
  request_ids: string[];
}

export interface DecisionSeen extends WriteSeen {
  decision: 'approve' | 'decline';
  lastVerdict: string;
  snapshotStatus: unknown;
}

export interface PaymentSeen extends WriteSeen {
  /** How long after the send the enrollment's updated_at moved; null if it never did. */
  movedMs: number | null;
  before: Record<string, unknown> | null;
  after: Record<string, unknown> | null;
  /** The enrollment record (after, else before) carries the payments list. */
  hasList: boolean;
}

function readContext(state: { missing: string | null }): ReadContext {
  let n = 0;
  return {
    nextReadId: () => `probe-read-${Date.now()}-${n++}`,
    missing: (what) => {
      state.missing = what;
    },
  };
}

function failure(error: unknown): string {
  const e = error as { endpoint?: string; status?: number; code?: string; message?: string };
  return e.status !== undefined
    ? `${e.endpoint ?? ''}: ${e.status} ${e.code ?? ''} ${e.message ?? ''}`.trim()
    : String(e.message ?? error);
}

async function send(write: () => Promise<unknown>): Promise<{ sentAt: number; writeError: string | null }> {
  const sentAt = Date.now();
  try {
    await write();
    return { sentAt, writeError: null };
  } catch (error) {
    return { sentAt, writeError: failure(error) };
  }
}

/** Decides one application and reads it back by the guard's rule until it shows or time is up. */
export async function decisionWrite(
  deps: WriteDeps,
  w: { applicationId: string; decision?: 'approve' | 'decline'; reason?: string },
): Promise<DecisionSeen> {
  const from = deps.seen.length;
  const state = { missing: null as string | null };
  const ctx = readContext(state);
  const strategy = applicationDecisionReadBack(deps.partner);
  const command = {
    decision_id: `probe-${Date.now()}`,
    application_id: w.applicationId,
    decision: w.decision ?? 'approve',
    ...(w.reason ? { reason: w.reason } : {}),
  } as const;
  deps.progress(`writing: ${command.decision} application ${w.applicationId}`);
  const snapshot = await strategy.snapshot(command, ctx);
  const { sentAt, writeError } = await send(() => strategy.write(command, `probe-write-${Date.now()}`));
  let visibleMs: number | null = null;
  let verdict = 'unknown';
  if (!writeError) {
    for (;;) {
      verdict = await strategy.verdict(command, snapshot, ctx);
      if (verdict === 'applied') {
        visibleMs = Date.now() - sentAt;
        break;
      }
      if (Date.now() - sentAt > deps.waitLimit) break;
      await sleep(deps.pollMs);
    }
  }
  return {
    decision: command.decision,
    writeError,
    visibleMs,
    missing: state.missing,
    lastVerdict: verdict,
    snapshotStatus: snapshot.status,
    request_ids: deps.seen.slice(from),
  };
}

const ENROLLMENTS = PAYMENT_VISIBLE_ON_ENROLLMENT.collection;
const UPDATED_AT = REPORT_MOVES_UPDATED_AT.field;

/**
 * Reports one payment and reads the enrollment back until the guard's rule sees it and its
 * updated_at moved, or time is up.
 */
export async function paymentWrite(
  deps: WriteDeps,
  w: { enrollmentId: string; amountCents?: number },
): Promise<PaymentSeen> {
  const from = deps.seen.length;
  const state = { missing: null as string | null };
  const ctx = readContext(state);
  const strategy = rentalPaymentReadBack(deps.partner);
  const now = new Date();
  const command = {
    payment_id: `probe-${Date.now()}`,
    enrollment_id: w.enrollmentId,
    amount_cents: w.amountCents ?? 100,
    paid_on: day(now),
    period: day(now).slice(0, 7),
  };
  deps.progress(`writing: report a payment of ${command.amount_cents} cents to enrollment ${w.enrollmentId}`);
  const before = await findRecord(deps.partner, ENROLLMENTS, command.enrollment_id, {}, ctx);
  const snapshot = await strategy.snapshot(command, ctx);
  const { sentAt, writeError } = await send(() => strategy.write(command, `probe-write-${Date.now()}`));
  let visibleMs: number | null = null;
  let movedMs: number | null = null;
  let after: Record<string, unknown> | null = null;
  while (!writeError) {
    const verdict = await strategy.verdict(command, snapshot, ctx);
    if (visibleMs === null && verdict === 'applied') visibleMs = Date.now() - sentAt;
    after = await findRecord(deps.partner, ENROLLMENTS, command.enrollment_id, {}, ctx);
    const moved = after && !sameTime(String(after[UPDATED_AT] ?? ''), String(before?.[UPDATED_AT] ?? ''));
    if (movedMs === null && moved) movedMs = Date.now() - sentAt;
    if ((visibleMs !== null && movedMs !== null) || Date.now() - sentAt > deps.waitLimit) break;
    await sleep(deps.pollMs);
  }
  return {
    writeError,
    visibleMs,
    movedMs,
    missing: state.missing,
    before,
    after,
    hasList: (paymentsOn(after) ?? paymentsOn(before)) !== null,
    request_ids: deps.seen.slice(from),
  };
}
