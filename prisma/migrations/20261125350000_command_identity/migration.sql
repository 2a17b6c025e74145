-- Issue 35: a command is its identity, source + command type + command id
-- (docs/decisions/020-command-identity.md). No row is lost: every existing guard row keeps its
-- state and attempts, and gets its source from the command message still in the outbox, else
-- '' (unknown; adopted by the first command of the same type, id and content that arrives).

-- commands: the source, and the request-id base every Partner API call of the command starts with.
ALTER TABLE "commands" ADD COLUMN "source" TEXT NOT NULL DEFAULT '';
ALTER TABLE "commands" ADD COLUMN "request_id_base" TEXT;

-- The source of the command message that created the row (the lowest outbox id of that type and
-- id): a PMS webhook's CloudEvent source is /webhooks/pms/<source>, anything else is kept as is.
UPDATE "commands" c SET "source" = m."source"
FROM (
  SELECT DISTINCT ON (command_type, command_id) command_type, command_id,
         CASE WHEN ce_source ~ '^/webhooks/pms/[^/]+$' THEN substring(ce_source FROM 15) ELSE ce_source END AS "source"
  FROM (
    SELECT o."id", o."source" AS ce_source,
           CASE o."topic"
             WHEN 'commands.application-decisions' THEN 'application_decision'
             WHEN 'commands.rental-payments' THEN 'rental_payment'
             WHEN 'commands.customer-registrations' THEN 'customer_registration'
             WHEN 'commands.enrollments' THEN 'enrollment'
           END AS command_type,
           CASE o."topic"
             WHEN 'commands.application-decisions' THEN o."data"->>'decision_id'
             WHEN 'commands.rental-payments' THEN o."data"->>'payment_id'
             WHEN 'commands.customer-registrations' THEN o."data"->>'registration_id'
             WHEN 'commands.enrollments' THEN o."data"->>'enrollment_request_id'
           END AS command_id
    FROM "outbox" o
    WHERE o."topic" IN ('commands.application-decisions', 'commands.rental-payments',
                        'commands.customer-registrations', 'commands.enrollments')
  ) sent
  WHERE command_id IS NOT NULL
  ORDER BY command_type, command_id, "id"
) m
WHERE c."command_type" = m.command_type AND c."command_id" = m.command_id;

-- The base the rows' request ids already use (the id, or the id sanitized + a hash of it).
UPDATE "commands" SET "request_id_base" = CASE
  WHEN "command_id" ~ '^[A-Za-z0-9_.-]{1,96}$' AND "command_id" NOT IN ('.', '..') THEN "command_id"
  ELSE left(regexp_replace("command_id", '[^A-Za-z0-9_.-]', '_', 'g'), 79) || '-' ||
       left(encode(sha256(convert_to("command_id", 'UTF8')), 'hex'), 16)
END;
ALTER TABLE "commands" ALTER COLUMN "request_id_base" SET NOT NULL;
CREATE UNIQUE INDEX "commands_request_id_base_key" ON "commands"("request_id_base");

-- command_attempts: the identity of their command.
ALTER TABLE "command_attempts" DROP CONSTRAINT "command_attempts_command_id_fkey";
ALTER TABLE "command_attempts" ADD COLUMN "source" TEXT;
ALTER TABLE "command_attempts" ADD COLUMN "command_type" TEXT;
UPDATE "command_attempts" a SET "source" = c."source", "command_type" = c."command_type"
FROM "commands" c WHERE c."command_id" = a."command_id";
-- An attempt without its command (none should exist: the foreign key cascaded deletes).
DELETE FROM "command_attempts" WHERE "source" IS NULL;
ALTER TABLE "command_attempts" ALTER COLUMN "source" SET NOT NULL;
ALTER TABLE "command_attempts" ALTER COLUMN "command_type" SET NOT NULL;
DROP INDEX "command_attempts_command_id_id_idx";
CREATE INDEX "command_attempts_source_command_type_command_id_id_idx" ON "command_attempts"("source", "command_type", "command_id", "id");

-- The new key.
ALTER TABLE "commands" DROP CONSTRAINT "commands_pkey";
ALTER TABLE "commands" ADD CONSTRAINT "commands_pkey" PRIMARY KEY ("source", "command_type", "command_id");
CREATE INDEX "commands_command_id_idx" ON "commands"("command_id");
ALTER TABLE "command_attempts" ADD CONSTRAINT "command_attempts_source_command_type_command_id_fkey" FOREIGN KEY ("source", "command_type", "command_id") REFERENCES "commands"("source", "command_type", "command_id") ON DELETE CASCADE ON UPDATE CASCADE;

-- dead_letters: the identity of the command a letter holds, from its value when it is a command.
-- A letter's value may be anything (an invalid message): read as JSON only when it is JSON.
CREATE FUNCTION pg_temp.rentbridge_try_jsonb(t TEXT) RETURNS JSONB LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
  RETURN t::jsonb;
EXCEPTION WHEN others THEN
  RETURN NULL;
END
$$;
ALTER TABLE "dead_letters" ADD COLUMN "command_source" TEXT;
ALTER TABLE "dead_letters" ADD COLUMN "command_type" TEXT;
UPDATE "dead_letters" d SET
  "command_type" = CASE
    WHEN d."original_topic" LIKE '%commands.application-decisions' THEN 'application_decision'
    WHEN d."original_topic" LIKE '%commands.rental-payments' THEN 'rental_payment'
    WHEN d."original_topic" LIKE '%commands.customer-registrations' THEN 'customer_registration'
    WHEN d."original_topic" LIKE '%commands.enrollments' THEN 'enrollment'
  END,
  "command_source" = (
    SELECT CASE WHEN ce ~ '^/webhooks/pms/[^/]+$' THEN substring(ce FROM 15) ELSE ce END
    FROM (SELECT CASE WHEN jsonb_typeof(v) = 'object' THEN v->>'source' END AS ce
          FROM (SELECT pg_temp.rentbridge_try_jsonb(d."value") AS v) parsed) attr
  )
WHERE d."command_id" IS NOT NULL;
CREATE INDEX "dead_letters_command_source_command_type_command_id_idx" ON "dead_letters"("command_source", "command_type", "command_id");
