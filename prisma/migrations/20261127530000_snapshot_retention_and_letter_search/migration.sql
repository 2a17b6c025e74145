-- Issue 42, what was left: snapshot_reads gets a retention (src/retention/retention-rules.ts), and the
-- dead letters' free-text search reads an index (docs/retention.md).

-- Pruning stored reads untouched past SNAPSHOT_READ_RETENTION_DAYS, oldest first.
CREATE INDEX IF NOT EXISTS "snapshot_reads_touched_at_idx" ON "snapshot_reads"((greatest("asked_at", "wrote_at")));

-- The free-text search (`search=`: ILIKE '%text%' over value, error message, key and corrected
-- value) through trigram GIN indexes (pg_trgm, shipped with PostgreSQL and a trusted extension:
-- the database's owner may create it). The extension lives in one schema for the whole database
-- (`public` when this migration creates it; where it already is otherwise), so deployments and
-- test schemas sharing a server share it, and dropping one schema never takes it away from the
-- others; the operator class is named with that schema. The search's ILIKE is PostgreSQL's own
-- operator, so the queries need no search_path. Where the extension cannot be created (not
-- installed, no privilege) the migration still applies, says so in a NOTICE, and the search reads
-- the table as before: the rest of rentbridge does not depend on it.
DO $$
DECLARE
  ext_schema text;
BEGIN
  -- Two migrations (two schemas) at once: the second waits, then finds the extension.
  PERFORM pg_advisory_xact_lock(hashtext('rentbridge.pg_trgm'));
  SELECT n.nspname INTO ext_schema
    FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'pg_trgm';
  IF ext_schema IS NULL THEN
    BEGIN
      CREATE EXTENSION pg_trgm WITH SCHEMA public;
      ext_schema := 'public';
    EXCEPTION WHEN OTHERS THEN
      RAISE NOTICE 'pg_trgm could not be created (%): the dead letters'' text search reads the table', SQLERRM;
      RETURN;
    END;
  END IF;
  EXECUTE format('CREATE INDEX IF NOT EXISTS "dead_letters_value_trgm_idx" ON "dead_letters" USING GIN ("value" %I.gin_trgm_ops) WITH (fastupdate = off)', ext_schema);
  EXECUTE format('CREATE INDEX IF NOT EXISTS "dead_letters_error_message_trgm_idx" ON "dead_letters" USING GIN ("error_message" %I.gin_trgm_ops) WITH (fastupdate = off)', ext_schema);
  EXECUTE format('CREATE INDEX IF NOT EXISTS "dead_letters_key_trgm_idx" ON "dead_letters" USING GIN ("key" %I.gin_trgm_ops) WITH (fastupdate = off)', ext_schema);
  EXECUTE format('CREATE INDEX IF NOT EXISTS "dead_letters_corrected_value_trgm_idx" ON "dead_letters" USING GIN ("corrected_value" %I.gin_trgm_ops) WITH (fastupdate = off)', ext_schema);
END
$$;
