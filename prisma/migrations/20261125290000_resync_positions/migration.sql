-- Where `rentbridge resync` is in each resource, so a stopped resync goes on (docs/decisions/024).
CREATE TABLE "resync_positions" (
    "resource" TEXT NOT NULL,
    "pages_done" INTEGER NOT NULL DEFAULT 0,
    "records" INTEGER NOT NULL DEFAULT 0,
    "started_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "finished_at" TIMESTAMPTZ(3),

    CONSTRAINT "resync_positions_pkey" PRIMARY KEY ("resource")
);
