-- Room on each page for the updates that follow an insert (issue 42): a command's row is updated as
-- the guard walks it (in flight, applied), an attempt's when it ends. Those updates change indexed
-- columns, so they are not HOT; with full pages their new versions went wherever the free-space
-- map pointed, a different old page for nearly every command in a table of a year, and the
-- overview's count of the last hour's commands read a page per command. With 10% left free an
-- update stays on its row's page, so the last hour's rows stay together. New pages only: existing
-- ones keep their layout until rewritten.
ALTER TABLE "commands" SET (fillfactor = 90);
ALTER TABLE "command_attempts" SET (fillfactor = 90);
