-- Each running role process reports here every few seconds (src/ops/role-heartbeat.ts), so the
-- console tells "not running" (no report within the bound) from "idle" (running, nothing to do).
CREATE TABLE "role_heartbeats" (
    "role" TEXT NOT NULL,
    "instance" TEXT NOT NULL,
    "seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "role_heartbeats_pkey" PRIMARY KEY ("role","instance")
);
