-- Issue 42, the dead letters' reads that still grew with history (docs/retention.md; decision 050):
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
