-- Issue 27: the outcome a command's consumer published last, whole (docs/decisions/028), so the
-- PMS-facing status endpoint answers what Kafka said, Partner ids included. Null for commands not
-- final yet and for those finished before this column (the status is then rebuilt from the row).
ALTER TABLE "commands" ADD COLUMN "outcome" JSONB;
