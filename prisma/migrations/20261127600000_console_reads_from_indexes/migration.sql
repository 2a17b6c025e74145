-- Issue 42, the console's reads that still grew with history, though no sequential scan: the
-- dead letters' (docs/retention.md; decision 050) and the callbacks' status.
--
-- The open letters, newest first, and their counts by reason and error code: the console's list,
-- its counts and the overview's open letters by reason read this index alone (index-only for the
-- counts: reason and error_code are in it). Before, the list walked the primary key backwards past
-- every resolved letter newer than the 100th open one, and the counts fetched the heap page of
-- every open letter, spread over the whole table (a year: one page per letter).
CREATE INDEX IF NOT EXISTS "dead_letters_state_id_idx" ON "dead_letters"("state", "id") INCLUDE ("reason", "error_code");

-- The overview's letters that arrived in the last hour: before, a range on the second column of
-- (state, indexed_at), which PostgreSQL 15 reads as the whole index.
CREATE INDEX IF NOT EXISTS "dead_letters_indexed_at_idx" ON "dead_letters"("indexed_at");

-- The callbacks' status (the console's, on each refresh): pending and dead deliveries per source
-- and the oldest pending, and the list of dead (or pending) ones newest first. Before, through
-- (state, source), the first fetched the table page of each waiting delivery and the second every
-- waiting delivery to sort them by id: both spread over everything kept. This one answers the
-- first alone (index-only) and the second in order.
CREATE INDEX IF NOT EXISTS "callback_deliveries_waiting_idx" ON "callback_deliveries"("state", "id") INCLUDE ("source", "created_at") WHERE "state" IN ('pending', 'dead');
