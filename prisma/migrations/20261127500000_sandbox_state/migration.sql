-- Issue 41: the embedded sandbox of `rentbridge start` keeps its state across restarts, in the
-- database rentbridge already uses, so the two live and go together (docs/decisions/047-*).
CREATE TABLE "sandbox_state" (
    "name" TEXT NOT NULL,
    "state" JSONB NOT NULL,
    "saved_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "sandbox_state_pkey" PRIMARY KEY ("name")
);
