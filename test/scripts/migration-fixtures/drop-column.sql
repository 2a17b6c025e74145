ALTER TABLE "commands" ADD COLUMN "result" JSONB, DROP COLUMN "outcome";
