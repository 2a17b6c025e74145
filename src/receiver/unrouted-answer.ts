import { commandContracts } from '../contracts/command-contracts.js';
import { WEBHOOK_EVENT_ACTIONS } from '../partner/assumptions.js';
import { RESOURCES, SINGULAR } from '../partner/resources.js';
import { TOPICS } from '../kafka/topics.js';

/**
 * What the receiver says about a signed webhook whose type it does not route (issue 41): it is
 * kept on inbound.unrouted (never drop a signed event), and the 202 says so, naming the topic and
 * the types that source may send, so that a typo (`rent_payment.recieved`) is seen at once.
 */

/** The webhook types a source may send: a PMS's command events, or the Partner API's record events. */
export function knownEventTypes(source: string): string[] {
  if (source === 'partner')
    return RESOURCES.flatMap((r) => WEBHOOK_EVENT_ACTIONS.map((a) => `${SINGULAR[r]}.${a}`));
  return commandContracts().map((c) => c.pmsEventType);
}

/** The body of the 202 for an unrouted webhook. */
export function unroutedAnswer(source: string, eventId: string | undefined): object {
  return {
    accepted: true,
    ...(eventId ? { event_id: eventId } : {}),
    routed: false,
    topic: TOPICS.unrouted,
    known_types: knownEventTypes(source),
  };
}

/** Distinct `type` label values per source, per process; later ones count as `other`. */
export const MAX_TYPE_LABELS = 20;
const LABEL_SHAPE = /^[A-Za-z0-9_.:-]{1,64}$/;

/**
 * The `type` label of rentbridge_webhooks_unrouted_total. The type is the sender's free text, so
 * its series are bounded: the first MAX_TYPE_LABELS distinct short, plain values of each source
 * are labelled as sent (a typo shows by name), anything else is `other`. Sources are the
 * configured ones (an unknown source never gets this far), so the metric has at most
 * sources × (MAX_TYPE_LABELS + 1) series.
 */
export function createTypeLabeler(max = MAX_TYPE_LABELS): (source: string, type: string) => string {
  const seen = new Map<string, Set<string>>();
  return (source, type) => {
    if (!LABEL_SHAPE.test(type) || type === 'other') return 'other';
    let types = seen.get(source);
    if (!types) seen.set(source, (types = new Set()));
    if (types.has(type)) return type;
    if (types.size >= max) return 'other';
    types.add(type);
    return type;
  };
}
