-- Issue 31 item 8: the overview charts, per polled resource, the age of its last successful pass
-- over the last hour. poller_cursors keeps only the last pass; this keeps each successful pass of
-- the hour before the resource's latest one and the one before that (the poller prunes the rest
-- when it writes: src/poller/poller-repository.ts), so the table stays a few rows per resource.
CREATE TABLE "poller_passes" (
    "resource" TEXT NOT NULL,
    "succeeded_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "poller_passes_pkey" PRIMARY KEY ("resource","succeeded_at")
);
