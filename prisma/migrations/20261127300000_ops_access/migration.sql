-- Issue 44: operators are people (docs/ops-access.md, docs/decisions/044-ops-access-and-audit-chain.md).

-- Personal API tokens: only a SHA-256 of the token is kept. A revoked token keeps its row (the
-- trail of who had access) and frees its name for a new token.
CREATE TABLE "ops_tokens" (
    "id" BIGSERIAL NOT NULL,
    "name" TEXT NOT NULL,
    "role" TEXT NOT NULL,
    "token_hash" TEXT NOT NULL,
    "created_by" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3),
    "last_used_at" TIMESTAMPTZ(3),
    "revoked_at" TIMESTAMPTZ(3),

    CONSTRAINT "ops_tokens_pkey" PRIMARY KEY ("id")
);
CREATE UNIQUE INDEX "ops_tokens_token_hash_key" ON "ops_tokens"("token_hash");
CREATE UNIQUE INDEX "ops_tokens_live_name_key" ON "ops_tokens"("name") WHERE "revoked_at" IS NULL;

-- Console sessions after OpenID Connect sign-in: the cookie carries a random id, the row its
-- SHA-256. Sign-out deletes the row, so a copied cookie is refused at once by every process.
CREATE TABLE "ops_sessions" (
    "id_hash" TEXT NOT NULL,
    "subject" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "role" TEXT NOT NULL,
    "csrf_token" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "ops_sessions_pkey" PRIMARY KEY ("id_hash")
);
CREATE INDEX "ops_sessions_expires_at_idx" ON "ops_sessions"("expires_at");

-- The hash chain of audit_log: each new entry stores the previous entry's hash and its own.
-- Rows written before this migration stay as they were (unchained): the chain starts after them.
ALTER TABLE "audit_log" ADD COLUMN "prev_hash" TEXT, ADD COLUMN "hash" TEXT;

-- One row: the chain's newest entry (appends lock this row, so two writers never fork the chain),
-- where the chain starts (legacy rows before it), and how far oldest-first pruning has gone.
CREATE TABLE "audit_chain" (
    "id" INTEGER NOT NULL DEFAULT 1,
    "legacy_through_id" BIGINT NOT NULL DEFAULT 0,
    "head_id" BIGINT,
    "head_hash" TEXT,
    "pruned_through_id" BIGINT,
    "pruned_through_hash" TEXT,
    "pruned_through_at" TIMESTAMPTZ(3),

    CONSTRAINT "audit_chain_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "audit_chain_one_row" CHECK ("id" = 1)
);
INSERT INTO "audit_chain" ("id", "legacy_through_id")
SELECT 1, COALESCE(MAX("id"), 0) FROM "audit_log";

-- Any DELETE on audit_log moves the pruned-through point to the newest chained row deleted. An
-- oldest-first prune (retention) leaves the chain verifiable from its new first entry; any other
-- deletion leaves rows at or before that point, or the head missing, and `rentbridge audit verify`
-- names it.
CREATE FUNCTION "audit_log_note_prune"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- Qualified by the trigger's own schema: right whatever the deleting session's search_path.
  EXECUTE format(
    'UPDATE %I."audit_chain" c
        SET "pruned_through_id" = g."id", "pruned_through_hash" = g."hash", "pruned_through_at" = g."at"
       FROM (SELECT "id", "hash", "at" FROM gone WHERE "hash" IS NOT NULL ORDER BY "id" DESC LIMIT 1) g
      WHERE c."id" = 1 AND g."id" > COALESCE(c."pruned_through_id", 0)', TG_TABLE_SCHEMA);
  RETURN NULL;
END;
$$;
CREATE TRIGGER "audit_log_pruned" AFTER DELETE ON "audit_log"
  REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION "audit_log_note_prune"();
