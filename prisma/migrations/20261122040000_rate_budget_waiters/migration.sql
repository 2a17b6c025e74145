-- Higher budget lanes announce that they wait, so lower lanes leave them the next free slot.
CREATE TABLE "rate_budget_waiters" (
    "id" TEXT NOT NULL,
    "budget" TEXT NOT NULL,
    "lane" TEXT NOT NULL,
    "rank" INTEGER NOT NULL,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "rate_budget_waiters_pkey" PRIMARY KEY ("id")
);

CREATE INDEX "rate_budget_waiters_budget_expires_at_idx" ON "rate_budget_waiters"("budget", "expires_at");
