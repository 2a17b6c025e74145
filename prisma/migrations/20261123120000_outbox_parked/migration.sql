-- A row the broker can never take (its CloudEvent is larger than the largest message the relay
-- may send) is parked: kept with its reason in last_error, never retried, never blocking others.
ALTER TABLE "outbox" ADD COLUMN "parked_at" TIMESTAMPTZ(3);
