-- Issue 33: the relay finds unpublished rows through this partial index (per topic, in id order),
-- so a fetch never walks the published rows kept for OUTBOX_RETENTION_HOURS: the work of a drain
-- grows with the backlog, not with its square. Not expressible in schema.prisma (partial index).
CREATE INDEX "outbox_unpublished_topic_id_idx" ON "outbox" ("topic", "id")
  WHERE "published_at" IS NULL AND "parked_at" IS NULL;
