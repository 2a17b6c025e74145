-- Issue 45: each reconciliation pass and its items (docs/reconciliation.md). A run holds its
-- window, its filters, what it cost (Partner requests, pages) and its counts by verdict; an item
-- is one command (or one platform record no command explains) with its verdict and the evidence.
CREATE TABLE "reconciliation_runs" (
    "id" BIGSERIAL NOT NULL,
    "started_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "finished_at" TIMESTAMPTZ(3),
    "trigger" TEXT NOT NULL,
    "since" TIMESTAMPTZ(3) NOT NULL,
    "until" TIMESTAMPTZ(3) NOT NULL,
    "source" TEXT,
    "command_type" TEXT,
    "state" TEXT NOT NULL DEFAULT 'running',
    "error" TEXT,
    "requests" INTEGER NOT NULL DEFAULT 0,
    "pages" INTEGER NOT NULL DEFAULT 0,
    "counts" JSONB NOT NULL DEFAULT '{}',

    CONSTRAINT "reconciliation_runs_pkey" PRIMARY KEY ("id")
);

CREATE INDEX "reconciliation_runs_started_at_idx" ON "reconciliation_runs"("started_at");

CREATE TABLE "reconciliation_items" (
    "id" BIGSERIAL NOT NULL,
    "run_id" BIGINT NOT NULL,
    "verdict" TEXT NOT NULL,
    "command_type" TEXT NOT NULL,
    "source" TEXT,
    "command_id" TEXT,
    "target_id" TEXT NOT NULL,
    "command_state" TEXT,
    "reason" TEXT NOT NULL,
    "evidence" JSONB NOT NULL DEFAULT '{}',

    CONSTRAINT "reconciliation_items_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "reconciliation_items_run_id_fkey" FOREIGN KEY ("run_id") REFERENCES "reconciliation_runs"("id") ON DELETE CASCADE
);

CREATE INDEX "reconciliation_items_run_id_verdict_idx" ON "reconciliation_items"("run_id", "verdict");
CREATE INDEX "reconciliation_items_command_idx" ON "reconciliation_items"("source", "command_type", "command_id");

-- A pass reads every command of the targets it reconciles (src/reconcile/reconcile-repository.ts).
CREATE INDEX "commands_command_type_target_id_idx" ON "commands"("command_type", "target_id");
