-- Issue 51 (erasure on request), the applications and inbound.unrouted: the lookups an erasure
-- adds, each by index, never a scan of a year of history (decision 053). Partial and expression
-- indexes: not expressible in schema.prisma.
-- The applications of the person's customers (an application names its applicant by customer_id),
-- in the stored list reads and in the changelog rows still in the outbox;
CREATE INDEX "snapshot_reads_application_customer_idx" ON "snapshot_reads" (("record"->>'customer_id'))
  WHERE "resource" = 'applications';
CREATE INDEX "outbox_application_customer_idx" ON "outbox" (("data"->'record'->>'customer_id'))
  WHERE "topic" = 'partner.applications';
-- the events of inbound.unrouted kept in the outbox (a body of any shape: read by topic, whose
-- rows are few and leave with the outbox's retention; never the whole outbox).
CREATE INDEX "outbox_unrouted_idx" ON "outbox" ("id") WHERE "topic" = 'inbound.unrouted';
