import { randomUUID } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import type { Logger } from '../../logger.js';
import type { SandboxControl } from '../sandbox/control-client.js';

/**
 * What `rentbridge start` sends when it runs the embedded sandbox, so a newcomer sees the whole
 * flow within a minute: signed PMS webhooks into our own receiver (first a few tenants registered
 * and enrolled, then decisions and payments), a few of them doomed (an unknown application: rejected, dead-lettered), and record changes in the
 * sandbox, which come back as Partner API webhooks. Stops after `total` events.
 */
export interface DemoTrafficOptions {
  receiverUrl: string;
  /** The PMS source the demo signs as, and its secret. */
  source: string;
  secret: string;
  sandbox: SandboxControl;
  logger: Logger;
  /** Events to send in all. Default 60. */
  total?: number;
  /** Pause between events. Default 1000 ms. */
  everyMs?: number;
  /**
   * Send the doomed decisions (an unknown application: dead-lettered on purpose). Default true;
   * `rentbridge start` sends them only when the sandbox was seeded now, so a restart adds no
   * demo dead letters.
   */
  doomed?: boolean;
}

export function startDemoTraffic(options: DemoTrafficOptions): { stop(): Promise<void> } {
  const logger = options.logger.child({ component: 'demo' });
  const signer = new Webhook(options.secret);
  const total = options.total ?? 60;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let sent = 0;

  async function send(type: string, data: Record<string, unknown>): Promise<void> {
    const id = `msg_${randomUUID()}`;
    const body = JSON.stringify({ type, data });
    const now = new Date();
    const res = await fetch(`${options.receiverUrl}/webhooks/pms/${options.source}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'webhook-id': id,
        'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
        'webhook-signature': signer.sign(id, now, body),
      },
      body,
    });
    // Debug: the demo PMS's outcome callbacks (info) show what came of each.
    logger.debug({ type, webhookId: id, status: res.status }, 'demo webhook sent');
  }

  // Onboarding first: each registered (checked, then created) and enrolled, as one chain.
  const run = randomUUID().slice(0, 8);
  const tenants = [
    ['Maya', 'Okafor'],
    ['Luis', 'Romero'],
    ['Hana', 'Sato'],
  ] as const;

  async function step(n: number): Promise<void> {
    const tenant = tenants[n];
    if (tenant) {
      const reference = `demo-tenant-${run}-${n + 1}`;
      await send('customer.registration_requested', {
        registration_id: `demo-reg-${randomUUID()}`,
        pms_reference: reference,
        first_name: tenant[0],
        last_name: tenant[1],
        email: `${reference}@example.com`,
        phone: `55501000${String(n).padStart(2, '0')}`,
        check: true,
        enroll: true,
      });
      return;
    }
    const i = n - tenants.length;
    const applications = await options.sandbox.records('applications');
    const enrollments = await options.sandbox.records('enrollments');
    const open = applications.filter((a) => a.status === 'submitted' || a.status === 'in_review');
    const active = enrollments.filter((e) => e.status === 'active');
    const pick = <T>(list: T[]): T | undefined => list[Math.floor(Math.random() * list.length)];
    switch (i % 6) {
      case 0:
      case 3: {
        const app = pick(open);
        if (app) {
          await send('application.decided', {
            decision_id: `demo-${randomUUID()}`,
            application_id: app.id,
            decision: i % 2 === 0 ? 'approve' : 'decline',
            reason: 'demo',
          });
        }
        break;
      }
      case 1:
      case 4: {
        const enrollment = pick(active);
        if (enrollment) {
          await send('rent_payment.received', {
            payment_id: `demo-${randomUUID()}`,
            enrollment_id: enrollment.id,
            amount_cents: 100_000 + Math.floor(Math.random() * 150_000),
            paid_on: new Date().toISOString().slice(0, 10),
          });
        }
        break;
      }
      case 2: {
        // A record changed on the platform: the sandbox sends a Partner API webhook.
        const app = pick(applications);
        if (app)
          await options.sandbox.patchRecord('applications', Number(app.id), { note: `demo change ${i}` });
        break;
      }
      default:
        // Doomed on purpose: no such application. The guard rejects it and it is dead-lettered.
        if (options.doomed === false) break;
        await send('application.decided', {
          decision_id: `demo-${randomUUID()}`,
          application_id: 999_999_999,
          decision: 'approve',
        });
    }
  }

  const loop = async () => {
    if (stopped) return;
    if (sent >= total) {
      logger.info({ sent }, 'demo traffic done');
      return;
    }
    try {
      await step(sent);
    } catch (error) {
      logger.warn({ err: error }, 'demo step failed');
    }
    sent += 1;
    if (!stopped) timer = setTimeout(() => void loop(), options.everyMs ?? 1000);
  };
  timer = setTimeout(() => void loop(), options.everyMs ?? 1000);

  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
