-- The console's overview reads the last hour of these tables every 10 s while it is shown: an
-- index on each time column makes that a range scan instead of a scan of the whole table
-- (measured in docs/benchmarks.md, "overview").
CREATE INDEX "webhook_receipts_received_at_idx" ON "webhook_receipts"("received_at");

CREATE INDEX "commands_finished_at_idx" ON "commands"("finished_at");

CREATE INDEX "command_attempts_started_at_idx" ON "command_attempts"("started_at");
