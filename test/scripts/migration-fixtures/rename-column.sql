ALTER TABLE ONLY commands RENAME COLUMN command_id TO id;
