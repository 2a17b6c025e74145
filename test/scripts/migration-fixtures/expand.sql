-- Expand: a new column and a new table; a column and a table no release uses, dropped.
ALTER TABLE "commands" ADD COLUMN "outcome_id" TEXT;
CREATE TABLE "release_notes" ("id" BIGSERIAL PRIMARY KEY);
ALTER TABLE "commands" DROP COLUMN IF EXISTS "never_used";
DROP TABLE IF EXISTS "old_scratch";
ALTER TABLE "commands" DROP CONSTRAINT "commands_old_check";
ALTER TABLE "commands" ALTER COLUMN "outcome" DROP NOT NULL;
