-- Issue 51, erasure on request (docs/privacy.md, docs/decisions/053-erasure-on-request.md).

-- The audit chain covers a digest of each entry's details, not the details (hash_version 2), so an
-- erasure can empty an entry's details and the chain still verifies. Entries chained before this
-- migration keep hash_version 1 and are verified as they were written; one erased afterwards is
-- held by its place in the chain only (its hash is kept, the next entry's prev_hash names it).
ALTER TABLE "audit_log"
  ADD COLUMN "hash_version" SMALLINT NOT NULL DEFAULT 1,
  ADD COLUMN "details_digest" TEXT,
  ADD COLUMN "details_erased_at" TIMESTAMPTZ(3);

-- An erased person stays erased: only a digest of the e-mail, never the address.
CREATE TABLE "erased_people" (
    "email_digest" TEXT NOT NULL,
    "first_erased_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_erased_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "erasures" INTEGER NOT NULL DEFAULT 1,
    CONSTRAINT "erased_people_pkey" PRIMARY KEY ("email_digest")
);

-- The Partner records erased (a customer, its enrollments): the poller, the platform's webhooks and
-- resync leave them out of every table and changelog while the platform still holds them.
CREATE TABLE "erased_records" (
    "resource" TEXT NOT NULL,
    "record_id" TEXT NOT NULL,
    "email_digest" TEXT NOT NULL,
    "erased_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "erased_records_pkey" PRIMARY KEY ("resource", "record_id")
);
CREATE INDEX "erased_records_email_digest_idx" ON "erased_records"("email_digest");

-- The lookups of one erasure, each by index, never a scan of a year of history:
-- a customer by its e-mail, and the enrollments of a customer, in the stored list reads ...
CREATE INDEX "snapshot_reads_customer_email_idx" ON "snapshot_reads" (lower("record"->>'email'))
  WHERE "resource" = 'customers';
CREATE INDEX "snapshot_reads_enrollment_customer_idx" ON "snapshot_reads" (("record"->>'customer_id'))
  WHERE "resource" = 'enrollments';
-- a record's stored reads under every key (the primary key leads with the key's id);
CREATE INDEX "snapshot_reads_record_idx" ON "snapshot_reads" ("resource", "record_id");
-- ... and in the changelog rows still in the outbox;
CREATE INDEX "outbox_customer_email_idx" ON "outbox" (lower("data"->'record'->>'email'))
  WHERE "topic" = 'partner.customers';
CREATE INDEX "outbox_enrollment_customer_idx" ON "outbox" (("data"->'record'->>'customer_id'))
  WHERE "topic" = 'partner.enrollments';
-- a reconciliation item by the record it is about (a platform record no command explains);
CREATE INDEX "reconciliation_items_target_idx" ON "reconciliation_items" ("target_id");
-- (commands by (command_type, target_id), attempts, dead letters, callbacks and audit entries by
-- command id, outbox rows by key: indexes of earlier migrations.)
