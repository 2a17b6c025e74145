import type { Logger } from '../../logger.js';
import { webhookEventType, type WebhookEventAction } from '../../partner/assumptions.js';
import { SINGULAR, type Resource } from '../../partner/resources.js';
import { KeyRing } from './api-keys.js';
import { FaultRegistry } from './faults.js';
import { RateLimiter } from './rate-limiter.js';
import { RecordStore, type SandboxRecord } from './record-store.js';
import { defaultConfig, type SandboxConfig } from './sandbox-config.js';
import { WebhookDispatcher } from './webhook-dispatcher.js';
import { WriteLedger } from './write-ledger.js';

/**
 * Everything a sandbox holds, in memory. `reset()` makes it new again (DESIGN.md: no
 * records, default keys and config, no faults, rate counters cleared).
 */
export class SandboxState {
  store = new RecordStore(() => this.config.created_at_precision);
  keys = new KeyRing();
  config: SandboxConfig = defaultConfig();
  readonly faults = new FaultRegistry();
  readonly ledger = new WriteLedger();
  readonly limiter = new RateLimiter();
  readonly webhooks: WebhookDispatcher;
  /** `<resource>:<id>` → when a record created under `list_lag_ms` starts to show in the lists. */
  readonly listedAt = new Map<string, number>();

  constructor(logger: Logger) {
    this.webhooks = new WebhookDispatcher(() => this.config, logger);
  }

  reset(): void {
    this.store = new RecordStore(() => this.config.created_at_precision);
    this.keys = new KeyRing();
    this.config = defaultConfig();
    this.faults.clear();
    this.ledger.clear();
    this.limiter.clear();
    this.webhooks.clear();
    this.listedAt.clear();
  }

  /** A record just created through the Partner API: under `list_lag_ms`, hidden from lists a while. */
  created(resource: Resource, record: SandboxRecord): void {
    const lag = this.config.list_lag_ms;
    if (lag > 0) this.listedAt.set(`${resource}:${record.id}`, Date.now() + lag);
  }

  /** Whether a record shows in the lists yet (`list_lag_ms`). */
  listed(resource: Resource, record: SandboxRecord): boolean {
    const key = `${resource}:${record.id}`;
    const at = this.listedAt.get(key);
    if (at === undefined) return true;
    if (at > Date.now()) return false;
    this.listedAt.delete(key);
    return true;
  }

  /** Every state change goes through here, so each one emits its webhook (spec 6). */
  changed(resource: Resource, record: SandboxRecord, kind: WebhookEventAction = 'updated'): void {
    this.webhooks.emit(webhookEventType(SINGULAR[resource], kind), record);
  }
}
