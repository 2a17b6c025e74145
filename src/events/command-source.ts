/**
 * The source a command acts for (issue 34), derived as the command identity of issue 35 derives
 * it: a command that arrived as a PMS webhook (`POST /webhooks/pms/:source`, CloudEvent `source`
 * `/webhooks/pms/<source>`) acts for that PMS source; any other command (a back-office producer's,
 * straight onto a `commands.*` topic) for its CloudEvent `source` attribute as it is. A follow-up
 * command rentbridge produces (a registration's enrollment) carries its cause's CloudEvent
 * `source`, so it acts for the same source.
 */
const PMS_WEBHOOK_SOURCE = /^\/webhooks\/pms\/([^/]+)$/;

export function commandSourceOf(ceSource: string): string {
  const pms = PMS_WEBHOOK_SOURCE.exec(ceSource);
  return pms ? pms[1]! : ceSource;
}
