-- The CloudEvent id a command's outcome was published under, kept with the outcome (issue 55): an
-- outcome published again keeps the id it was first published under, across versions. Empty on
-- the rows 0.1.0 wrote, whose outcomes went out as `outcome.<base>` (keptOutcomeId). Expand only:
-- a nullable column the previous release neither reads nor writes (docs/releasing.md).
ALTER TABLE "commands" ADD COLUMN "outcome_id" TEXT;
