import { randomUUID } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import type { LedgerEntry, SandboxControl } from '../../src/dev/sandbox/control-client.js';

/** One command the traffic sent: a payment or a decision, as a PMS sends it (a signed webhook). */
export interface SentCommand {
  id: string;
  kind: 'payment' | 'decision';
  /** Unique per command, so that a ledger write names its command by its body alone. */
  mark: number | string;
  /** Sent to the enrollment whose first writes are refused: a dead letter of the old version. */
  deadLetter?: boolean;
  ackedAt?: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Signed PMS webhooks at a steady rate, each retried as a sender would (same webhook-id, signed
 * again) while the receiver is away: across the stop of one version and the start of the next.
 */
export function createTraffic(options: {
  receiverUrl: () => string;
  source: string;
  secret: string;
  enrollments: number[];
  applications: number[];
  deadLetterEnrollment: number;
}) {
  const signer = new Webhook(options.secret);
  const commands: SentCommand[] = [];
  const pending = new Set<Promise<void>>();
  /** Why a command was never acknowledged, for each such one. */
  const errors: string[] = [];
  let seq = 0;
  let running = false;

  async function post(type: string, data: Record<string, unknown>, command: SentCommand): Promise<void> {
    const webhookId = `msg_${randomUUID()}`;
    const body = JSON.stringify({ type, timestamp: new Date().toISOString(), data });
    const deadline = Date.now() + 120_000;
    while (Date.now() < deadline) {
      const at = new Date();
      try {
        const res = await fetch(`${options.receiverUrl()}/webhooks/pms/${options.source}`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'webhook-id': webhookId,
            'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
            'webhook-signature': signer.sign(webhookId, at, body),
          },
          body,
          signal: AbortSignal.timeout(5000),
        });
        await res.text();
        if (res.ok) {
          command.ackedAt = Date.now();
          return;
        }
        if (res.status >= 400 && res.status < 500 && res.status !== 429)
          throw new Error(`the receiver refused ${command.kind} ${command.id}: ${res.status}`);
      } catch (error) {
        if ((error as Error).message.startsWith('the receiver refused')) throw error;
      }
      await sleep(250);
    }
    throw new Error(`${command.kind} ${command.id} was never acknowledged`);
  }

  function sendOne(deadLetter = false): void {
    seq += 1;
    let p: Promise<void>;
    if (deadLetter || seq % 3 !== 0 || seq / 3 >= options.applications.length) {
      const command: SentCommand = { id: `pay_${randomUUID()}`, kind: 'payment', mark: 200_000 + seq };
      if (deadLetter) command.deadLetter = true;
      commands.push(command);
      const enrollment = deadLetter
        ? options.deadLetterEnrollment
        : options.enrollments[seq % options.enrollments.length]!;
      p = post(
        'rent_payment.received',
        {
          payment_id: command.id,
          enrollment_id: enrollment,
          amount_cents: command.mark,
          paid_on: new Date().toISOString().slice(0, 10),
          period: new Date().toISOString().slice(0, 7),
        },
        command,
      );
    } else {
      const command: SentCommand = { id: `dec_${randomUUID()}`, kind: 'decision', mark: `upgrade ${seq}` };
      commands.push(command);
      p = post(
        'application.decided',
        {
          decision_id: command.id,
          application_id: options.applications[Math.floor(seq / 3) - 1],
          decision: seq % 2 === 0 ? 'approve' : 'decline',
          reason: command.mark,
        },
        command,
      );
    }
    // Handled at once (an unhandled rejection would end the run without its clean-up).
    const tracked: Promise<void> = p
      .catch((error: Error) => void errors.push(error.message))
      .finally(() => pending.delete(tracked));
    pending.add(tracked);
  }

  return {
    commands,
    /** Sends `rate` commands a second until stop(). */
    start(rate: number): void {
      running = true;
      void (async () => {
        while (running) {
          sendOne();
          await sleep(1000 / rate);
        }
      })();
    },
    /** The payments the old version dead-letters (their enrollment's first writes are refused). */
    sendDeadLetters(n: number): void {
      for (let i = 0; i < n; i++) sendOne(true);
    },
    /** Stops sending and waits for every send to end; the errors of those never acknowledged. */
    async stop(): Promise<string[]> {
      running = false;
      while (pending.size > 0) await Promise.all([...pending]);
      return errors;
    },
  };
}

/** The command a ledger write belongs to, by its body (unique amount or reason). */
export function writesByCommand(ledger: LedgerEntry[], commands: SentCommand[]): Map<string, LedgerEntry[]> {
  const byMark = new Map<string | number, string>(commands.map((c) => [c.mark, c.id]));
  const out = new Map<string, LedgerEntry[]>();
  for (const w of ledger) {
    if (!w.applied) continue;
    const body = (w.body ?? {}) as { reason?: unknown; rental_payments?: Array<{ amount_cents?: unknown }> };
    const mark = typeof body.reason === 'string' ? body.reason : body.rental_payments?.[0]?.amount_cents;
    const id = mark === undefined ? undefined : byMark.get(mark as string | number);
    if (!id) continue;
    out.set(id, [...(out.get(id) ?? []), w]);
  }
  return out;
}

/** Records for the run: active enrollments, submitted applications, and the dead-letter one. */
export async function seedSandbox(sandbox: SandboxControl, applications: number) {
  const enrollments = await sandbox.addRecords(
    'enrollments',
    Array.from({ length: 12 }, () => ({ status: 'active', rental_payments: [] })),
  );
  const [deadLetter] = await sandbox.addRecords('enrollments', [{ status: 'active', rental_payments: [] }]);
  const apps = await sandbox.addRecords(
    'applications',
    Array.from({ length: applications }, () => ({ status: 'submitted' })),
  );
  return {
    enrollments: enrollments.map((e) => Number(e.id)),
    deadLetterEnrollment: Number(deadLetter!.id),
    applications: apps.map((a) => Number(a.id)),
  };
}
