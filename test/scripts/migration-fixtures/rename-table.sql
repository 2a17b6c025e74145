ALTER TABLE "command_attempts" RENAME TO "command_steps";
