-- The stale limit of each resource, as the poller that last started a pass had it
-- (src/poller/pass-staleness.ts): the overview judges a resource by its own interval.
ALTER TABLE "poller_cursors" ADD COLUMN "stale_after_seconds" INTEGER;
