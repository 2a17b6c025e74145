-- CreateTable
CREATE TABLE "webhook_receipts" (
    "source" TEXT NOT NULL,
    "webhook_id" TEXT NOT NULL,
    "event_type" TEXT NOT NULL,
    "received_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "outbox_id" BIGINT,

    CONSTRAINT "webhook_receipts_pkey" PRIMARY KEY ("source","webhook_id")
);

-- CreateTable
CREATE TABLE "outbox" (
    "id" BIGSERIAL NOT NULL,
    "event_id" UUID NOT NULL,
    "topic" TEXT NOT NULL,
    "key" TEXT NOT NULL,
    "type" TEXT NOT NULL,
    "source" TEXT NOT NULL,
    "subject" TEXT,
    "data" JSONB NOT NULL,
    "headers" JSONB NOT NULL DEFAULT '{}',
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "published_at" TIMESTAMPTZ(3),
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "last_error" TEXT,

    CONSTRAINT "outbox_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "published_versions" (
    "resource" TEXT NOT NULL,
    "record_id" TEXT NOT NULL,
    "updated_at" TEXT NOT NULL,
    "via" TEXT NOT NULL,
    "published_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "published_versions_pkey" PRIMARY KEY ("resource","record_id","updated_at")
);

-- CreateTable
CREATE TABLE "known_records" (
    "resource" TEXT NOT NULL,
    "record_id" TEXT NOT NULL,
    "updated_at" TEXT NOT NULL,
    "status" TEXT,
    "removed_at" TIMESTAMPTZ(3),
    "seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "known_records_pkey" PRIMARY KEY ("resource","record_id")
);

-- CreateTable
CREATE TABLE "poller_cursors" (
    "resource" TEXT NOT NULL,
    "from_date" TEXT,
    "last_started_at" TIMESTAMPTZ(3),
    "last_succeeded_at" TIMESTAMPTZ(3),
    "last_failed_at" TIMESTAMPTZ(3),
    "last_error" TEXT,
    "last_stats" JSONB,

    CONSTRAINT "poller_cursors_pkey" PRIMARY KEY ("resource")
);

-- CreateTable
CREATE TABLE "rate_budget_slots" (
    "id" BIGSERIAL NOT NULL,
    "budget" TEXT NOT NULL,
    "lane" TEXT NOT NULL,
    "taken_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "rate_budget_slots_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "rate_budget_state" (
    "budget" TEXT NOT NULL,
    "paused_until" TIMESTAMPTZ(3),
    "remaining" INTEGER,
    "remaining_at" TIMESTAMPTZ(3),
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "rate_budget_state_pkey" PRIMARY KEY ("budget")
);

-- CreateTable
CREATE TABLE "commands" (
    "command_id" TEXT NOT NULL,
    "command_type" TEXT NOT NULL,
    "target_id" TEXT NOT NULL,
    "state" TEXT NOT NULL,
    "payload" JSONB NOT NULL,
    "snapshot" JSONB,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "request_ids" TEXT[],
    "last_error" JSONB,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "finished_at" TIMESTAMPTZ(3),

    CONSTRAINT "commands_pkey" PRIMARY KEY ("command_id")
);

-- CreateTable
CREATE TABLE "command_attempts" (
    "id" BIGSERIAL NOT NULL,
    "command_id" TEXT NOT NULL,
    "attempt" INTEGER NOT NULL,
    "request_id" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "started_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "finished_at" TIMESTAMPTZ(3),
    "result" TEXT,
    "status" INTEGER,
    "code" TEXT,
    "message" TEXT,

    CONSTRAINT "command_attempts_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "dead_letters" (
    "id" BIGSERIAL NOT NULL,
    "dlq_topic" TEXT NOT NULL,
    "partition" INTEGER NOT NULL,
    "offset" TEXT NOT NULL,
    "key" TEXT,
    "value" TEXT NOT NULL,
    "headers" JSONB NOT NULL,
    "original_topic" TEXT,
    "original_partition" INTEGER,
    "original_offset" TEXT,
    "reason" TEXT,
    "error_code" TEXT,
    "error_status" INTEGER,
    "error_message" TEXT,
    "command_id" TEXT,
    "partner_request_ids" TEXT[],
    "attempts" INTEGER,
    "consumer_group" TEXT,
    "first_failure_at" TIMESTAMPTZ(3),
    "last_failure_at" TIMESTAMPTZ(3),
    "state" TEXT NOT NULL DEFAULT 'open',
    "corrected_value" TEXT,
    "resolved_at" TIMESTAMPTZ(3),
    "resolved_by" TEXT,
    "resolution" TEXT,
    "indexed_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "dead_letters_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "audit_log" (
    "id" BIGSERIAL NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "actor" TEXT NOT NULL,
    "action" TEXT NOT NULL,
    "target" TEXT NOT NULL,
    "reason" TEXT,
    "details" JSONB NOT NULL DEFAULT '{}',

    CONSTRAINT "audit_log_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "outbox_event_id_key" ON "outbox"("event_id");

-- CreateIndex
CREATE INDEX "outbox_published_at_id_idx" ON "outbox"("published_at", "id");

-- CreateIndex
CREATE INDEX "rate_budget_slots_budget_taken_at_idx" ON "rate_budget_slots"("budget", "taken_at");

-- CreateIndex
CREATE INDEX "commands_state_idx" ON "commands"("state");

-- CreateIndex
CREATE INDEX "command_attempts_command_id_id_idx" ON "command_attempts"("command_id", "id");

-- CreateIndex
CREATE INDEX "dead_letters_state_indexed_at_idx" ON "dead_letters"("state", "indexed_at");

-- CreateIndex
CREATE INDEX "dead_letters_reason_error_code_idx" ON "dead_letters"("reason", "error_code");

-- CreateIndex
CREATE INDEX "dead_letters_command_id_idx" ON "dead_letters"("command_id");

-- CreateIndex
CREATE UNIQUE INDEX "dead_letters_dlq_topic_partition_offset_key" ON "dead_letters"("dlq_topic", "partition", "offset");

-- CreateIndex
CREATE INDEX "audit_log_at_idx" ON "audit_log"("at");

-- AddForeignKey
ALTER TABLE "command_attempts" ADD CONSTRAINT "command_attempts_command_id_fkey" FOREIGN KEY ("command_id") REFERENCES "commands"("command_id") ON DELETE CASCADE ON UPDATE CASCADE;

