-- DROP TABLE "commands"; (a comment: not a statement)
DROP TABLE IF EXISTS public."command_attempts" CASCADE;
