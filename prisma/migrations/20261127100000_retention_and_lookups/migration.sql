-- Issue 42: every table has a retention (src/retention/), and every lookup the trace, the PMS
-- status API, the console, the CLI, the callbacks and the guard make on a growing table is an
-- index lookup (docs/retention.md, docs/decisions/042-retention-and-lookups.md).
--
-- Each index is IF NOT EXISTS: on a deployment whose tables are already large, an operator may
-- build them beforehand with CREATE INDEX CONCURRENTLY under the same names (this runner applies a
-- migration in one transaction, where CONCURRENTLY is not allowed), and this migration then only
-- records itself.

-- Where each table's pruning is: when it last ran, how many rows it has deleted, whether rows past
-- the horizon were left for the next pass (the console's "last pruned" and the pruner's state).
CREATE TABLE "retention_state" (
    "table_name" TEXT NOT NULL,
    "last_pass_at" TIMESTAMPTZ(3),
    "last_pruned_at" TIMESTAMPTZ(3),
    "last_pruned_rows" BIGINT NOT NULL DEFAULT 0,
    "pruned_total" BIGINT NOT NULL DEFAULT 0,
    "behind" BOOLEAN NOT NULL DEFAULT false,

    CONSTRAINT "retention_state_pkey" PRIMARY KEY ("table_name")
);

-- The trace by a target record id, and the PMS's command list by source and time.
CREATE INDEX IF NOT EXISTS "commands_target_id_idx" ON "commands"("target_id");
CREATE INDEX IF NOT EXISTS "commands_source_updated_at_idx" ON "commands"("source", "updated_at", "command_type", "command_id");

-- The trace by a Partner request id.
CREATE INDEX IF NOT EXISTS "command_attempts_request_id_idx" ON "command_attempts"("request_id");

-- The trace by a record id; pruning superseded versions by age.
CREATE INDEX IF NOT EXISTS "published_versions_record_id_idx" ON "published_versions"("record_id");
CREATE INDEX IF NOT EXISTS "published_versions_published_at_idx" ON "published_versions"("published_at");

-- Pruning records removed long ago.
CREATE INDEX IF NOT EXISTS "known_records_removed_at_idx" ON "known_records"("removed_at") WHERE "removed_at" IS NOT NULL;

-- The trace's dead-letter lookups: by key, by a Partner request id (a GIN index serves
-- `partner_request_ids @> ARRAY[id]`, never `id = ANY(partner_request_ids)`), by the webhook-id
-- and CloudEvent id headers; pruning resolved letters by age.
CREATE INDEX IF NOT EXISTS "dead_letters_key_idx" ON "dead_letters"("key");
CREATE INDEX IF NOT EXISTS "dead_letters_partner_request_ids_idx" ON "dead_letters" USING GIN ("partner_request_ids");
CREATE INDEX IF NOT EXISTS "dead_letters_webhook_id_idx" ON "dead_letters"((("headers" ->> 'webhook-id')));
CREATE INDEX IF NOT EXISTS "dead_letters_ce_id_idx" ON "dead_letters"((("headers" ->> 'ce_id')));
CREATE INDEX IF NOT EXISTS "dead_letters_resolved_at_idx" ON "dead_letters"("resolved_at") WHERE "state" <> 'open';

-- The trace's audit lookups: by target, by the command id in its details.
CREATE INDEX IF NOT EXISTS "audit_log_target_idx" ON "audit_log"("target");
CREATE INDEX IF NOT EXISTS "audit_log_command_id_idx" ON "audit_log"((("details" ->> 'commandId')));

-- The callbacks' status (delivered in the last day, per source) and pruning delivered callbacks.
CREATE INDEX IF NOT EXISTS "callback_deliveries_delivered_idx" ON "callback_deliveries"("delivered_at", "source") WHERE "state" = 'delivered';

-- The trace's outbox lookups (the outbox is kept OUTBOX_RETENTION_HOURS, which an operator may
-- raise): by key, subject and webhook-id header.
CREATE INDEX IF NOT EXISTS "outbox_key_idx" ON "outbox"("key");
CREATE INDEX IF NOT EXISTS "outbox_subject_idx" ON "outbox"("subject");
CREATE INDEX IF NOT EXISTS "outbox_webhook_id_idx" ON "outbox"((("headers" ->> 'webhook-id')));

-- The trace's receipt lookups: by webhook id alone, and by the outbox row a receipt produced.
CREATE INDEX IF NOT EXISTS "webhook_receipts_webhook_id_idx" ON "webhook_receipts"("webhook_id");
CREATE INDEX IF NOT EXISTS "webhook_receipts_outbox_id_idx" ON "webhook_receipts"("outbox_id");
