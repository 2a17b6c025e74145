-- Issue 43 item 1: the latest list read of each record, shared by every process, so a snapshot
-- needs no request when a young enough read exists, and otherwise reads the one page that held
-- the record instead of paging from page 1 (docs/decisions/043-*).
CREATE TABLE "snapshot_reads" (
    "key_id" TEXT NOT NULL,
    "resource" TEXT NOT NULL,
    "record_id" TEXT NOT NULL,
    "page" INTEGER,
    "per_page" INTEGER,
    "record" JSONB,
    "asked_at" TIMESTAMPTZ(3),
    "wrote_at" TIMESTAMPTZ(3),

    CONSTRAINT "snapshot_reads_pkey" PRIMARY KEY ("key_id", "resource", "record_id")
);
