/**
 * An outcome's CloudEvent id names the command and its result (DESIGN.md, outcome callbacks;
 * docs/decisions/041-outcome-ids-name-the-result.md): `outcome.<request-id base>.<status>`.
 * The same outcome published again (a redelivery, a redrive of a final command) keeps its id; a
 * different result of the same command (`unverified` later redriven to `applied`) is a new event
 * with a new id, so a consumer that drops duplicates by CloudEvents `source` + `id` never drops a
 * result it has not seen. The callbacks' `webhook-id` is this id.
 */
export function outcomeEventId(requestIdBase: string, status: string): string {
  return `outcome.${requestIdBase}.${status}`;
}

/**
 * The `webhook-id` of an outcome's callback: its CloudEvent id. An outcome published before ids
 * named their result (`outcome.<base>`, still on the topics until retention ends) gets the status
 * appended, the webhook-id it was delivered under then: a replay is still the same delivery.
 */
export function callbackWebhookId(eventId: string, status: string): string {
  return eventId.endsWith(`.${status}`) ? eventId : `${eventId}.${status}`;
}
