import type { OutboxMessageInput } from '../outbox/outbox-repository.js';
import type { Resource } from '../partner/resources.js';

/** What the ingest writer makes durable: one accepted webhook's event. */

interface ItemBase {
  /** `partner` or `pms:<source>`: the receipt's namespace of webhook ids. */
  source: string;
  webhookId: string;
  eventType: string;
}

/** An event published as given (commands, unrouted). */
export interface MessageItem extends ItemBase {
  kind: 'message';
  message: OutboxMessageInput & { eventId: string };
}

/** A partner record's new version, published only if neither path saw it before. */
export interface StateChangeItem extends ItemBase {
  kind: 'state-change';
  change: {
    resource: Resource;
    record: Record<string, unknown>;
    removed: boolean;
    source: string;
    headers: Record<string, string>;
  };
}

export type IngestItem = MessageItem | StateChangeItem;
