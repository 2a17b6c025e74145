-- The poller records the progress of the pass under way, page by page, so that a long first pass
-- (hundreds of pages) reads as moving while its pages arrive, and as stalled once they stop
-- (src/poller/pass-staleness.ts).
ALTER TABLE "poller_cursors" ADD COLUMN "pass_pages" INTEGER,
ADD COLUMN "pass_page_count" INTEGER,
ADD COLUMN "last_page_at" TIMESTAMPTZ(3);
