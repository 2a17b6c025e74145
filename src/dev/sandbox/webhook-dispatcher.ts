import { randomUUID } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import type { Logger } from '../../logger.js';
import { WEBHOOK_SIGNING } from '../../partner/assumptions.js';
import type { SandboxConfig } from './sandbox-config.js';

export interface DeliveryAttempt {
  at: string;
  /** The receiver's HTTP status; null when the request failed (network error, timeout). */
  status: number | null;
  error?: string;
}

export interface WebhookDelivery {
  /** The `webhook-id` header, the same on every attempt (receivers dedupe on it). */
  id: string;
  type: string;
  url: string;
  payload: { type: string; data: unknown };
  status: 'pending' | 'delivered' | 'failed';
  attempts: DeliveryAttempt[];
}

/** How long one attempt may take before it counts as failed. */
const ATTEMPT_TIMEOUT_MS = 5000;
/** Attempts in flight at once: seeding 100,000 records must not open 100,000 connections. */
const MAX_IN_FLIGHT = 8;

/**
 * Sends state-change events (DESIGN.md assumption: `{ type, data }`, Standard Webhooks
 * signature) to the configured URL, off the request path: an API response never waits for a
 * delivery. Failed attempts are retried with exponential back-off.
 */
export class WebhookDispatcher {
  private deliveries: WebhookDelivery[] = [];
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly inFlight = new Set<AbortController>();
  /** Attempts due but waiting for a free slot, oldest first. */
  private queue: Array<() => Promise<void>> = [];
  private stopped = false;

  constructor(
    private readonly config: () => SandboxConfig,
    private readonly logger: Logger,
  ) {}

  emit(type: string, data: unknown): void {
    const { webhook_url: url, webhook_secret: secret } = this.config();
    if (!url || !secret || this.stopped) return;
    const delivery: WebhookDelivery = {
      id: `msg_${randomUUID()}`,
      type,
      url,
      payload: { type, data },
      status: 'pending',
      attempts: [],
    };
    this.deliveries.push(delivery);
    this.schedule(delivery, secret, 0);
  }

  list(): WebhookDelivery[] {
    return this.deliveries.map((d) => ({ ...d, attempts: [...d.attempts] }));
  }

  /** Forgets every delivery and cancels the pending ones (reset). */
  clear(): void {
    this.cancel();
    this.deliveries = [];
  }

  stop(): void {
    this.stopped = true;
    this.cancel();
  }

  private cancel(): void {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    for (const controller of this.inFlight) controller.abort();
    this.inFlight.clear();
    this.queue = [];
  }

  private schedule(delivery: WebhookDelivery, secret: string, delayMs: number): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      this.queue.push(() => this.attempt(delivery, secret));
      this.drain();
    }, delayMs);
    timer.unref();
    this.timers.add(timer);
  }

  private drain(): void {
    while (this.inFlight.size < MAX_IN_FLIGHT && this.queue.length > 0) {
      const next = this.queue.shift();
      if (next) void next().finally(() => this.drain());
    }
  }

  private async attempt(delivery: WebhookDelivery, secret: string): Promise<void> {
    const body = JSON.stringify(delivery.payload);
    const controller = new AbortController();
    const timeout = setTimeout(() => controller.abort(), ATTEMPT_TIMEOUT_MS);
    timeout.unref();
    this.inFlight.add(controller);
    const attempt: DeliveryAttempt = { at: new Date().toISOString(), status: null };
    try {
      const timestamp = new Date();
      const signature = new Webhook(secret).sign(delivery.id, timestamp, body);
      const response = await fetch(delivery.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          [WEBHOOK_SIGNING.headers.id]: delivery.id,
          [WEBHOOK_SIGNING.headers.timestamp]: String(Math.floor(timestamp.getTime() / 1000)),
          [WEBHOOK_SIGNING.headers.signature]: signature,
        },
        body,
        signal: controller.signal,
      });
      await response.arrayBuffer().catch(() => undefined);
      attempt.status = response.status;
    } catch (error) {
      attempt.error = (error as Error).message;
    } finally {
      clearTimeout(timeout);
      this.inFlight.delete(controller);
    }
    if (this.stopped || !this.deliveries.includes(delivery)) return;
    delivery.attempts.push(attempt);
    if (attempt.status !== null && attempt.status >= 200 && attempt.status < 300) {
      delivery.status = 'delivered';
      return;
    }
    const { webhook_max_attempts: max, webhook_retry_base_ms: base } = this.config();
    if (delivery.attempts.length >= max) {
      delivery.status = 'failed';
      this.logger.warn({ webhookId: delivery.id, type: delivery.type }, 'webhook delivery failed');
      return;
    }
    this.schedule(delivery, secret, base * 2 ** (delivery.attempts.length - 1));
  }
}
