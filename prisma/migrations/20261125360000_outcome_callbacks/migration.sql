-- Outcome callbacks (issue 27 item 3, docs/decisions/029-outcome-callbacks.md): every outcome of a
-- command from a PMS source with a PMS_CALLBACKS entry is one delivery, POSTed to the source's URL
-- until a 2xx, retried with back-off, a dead letter ("dead") when its retry span runs out.
CREATE TABLE "callback_deliveries" (
    "id" BIGSERIAL NOT NULL,
    "source" TEXT NOT NULL,
    -- The Standard Webhooks `webhook-id`: the same on every attempt and redelivery (the PMS dedupes on it).
    "webhook_id" TEXT NOT NULL,
    "event_id" TEXT NOT NULL,
    "event_type" TEXT NOT NULL,
    "command_type" TEXT NOT NULL,
    "command_id" TEXT NOT NULL,
    "outcome_status" TEXT NOT NULL,
    -- The outcome's CloudEvent as it was on Kafka: the body POSTed.
    "payload" TEXT NOT NULL,
    -- pending | delivered | dead
    "state" TEXT NOT NULL DEFAULT 'pending',
    "attempts" INTEGER NOT NULL DEFAULT 0,
    -- Failures since the retry span began (reset by a redelivery): the back-off's exponent.
    "failures" INTEGER NOT NULL DEFAULT 0,
    "next_attempt_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    -- The retry span counts from here: the outcome's arrival, or the last redelivery.
    "retry_from" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "delivered_at" TIMESTAMPTZ(3),
    "dead_at" TIMESTAMPTZ(3),
    "last_status" INTEGER,
    "last_error" TEXT,

    CONSTRAINT "callback_deliveries_pkey" PRIMARY KEY ("id")
);

-- One delivery per outcome per source: a replayed or republished outcome is not delivered twice.
CREATE UNIQUE INDEX "callback_deliveries_source_webhook_id_key" ON "callback_deliveries"("source", "webhook_id");
-- The delivery loop's claim: a source's due deliveries, oldest first.
CREATE INDEX "callback_deliveries_due_idx" ON "callback_deliveries"("source", "next_attempt_at") WHERE "state" = 'pending';
CREATE INDEX "callback_deliveries_state_idx" ON "callback_deliveries"("state", "source");
CREATE INDEX "callback_deliveries_command_idx" ON "callback_deliveries"("command_id");

CREATE TABLE "callback_attempts" (
    "id" BIGSERIAL NOT NULL,
    "delivery_id" BIGINT NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "url" TEXT NOT NULL,
    -- delivered | failed | timeout | network_error | gone
    "result" TEXT NOT NULL,
    "http_status" INTEGER,
    "duration_ms" INTEGER NOT NULL,
    "error" TEXT,

    CONSTRAINT "callback_attempts_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "callback_attempts_delivery_id_fkey" FOREIGN KEY ("delivery_id") REFERENCES "callback_deliveries"("id") ON DELETE CASCADE
);
CREATE INDEX "callback_attempts_delivery_id_idx" ON "callback_attempts"("delivery_id", "at");

-- Per source: its endpoint's state as the delivering processes see it (the console's overview reads
-- it). A 410 disables the endpoint at `disabled_url`; configuring another URL enables it again.
CREATE TABLE "callback_endpoints" (
    "source" TEXT NOT NULL,
    -- closed | open | half_open (the circuit breaker)
    "breaker" TEXT NOT NULL DEFAULT 'closed',
    "consecutive_failures" INTEGER NOT NULL DEFAULT 0,
    "disabled_url" TEXT,
    "disabled_at" TIMESTAMPTZ(3),
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "callback_endpoints_pkey" PRIMARY KEY ("source")
);
