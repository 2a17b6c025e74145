import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { migrationProblems, usedSchema } from '../../scripts/migration-rules.js';

const fixture = (name: string) =>
  readFileSync(new URL(`./migration-fixtures/${name}`, import.meta.url), 'utf8');
const previous = usedSchema(fixture('previous.prisma'));

/** docs/releasing.md: a migration expands now and contracts one release later. */
describe('the migration lint (scripts/check-migrations.ts)', () => {
  it("reads the previous release's tables and columns from its schema.prisma, relation fields apart", () => {
    expect([...previous.keys()]).toEqual(['commands', 'command_attempts']);
    expect([...previous.get('commands')!]).toEqual(['source', 'command_id', 'outcome']);
    expect([...previous.get('command_attempts')!]).toEqual(['id', 'request_id']);
  });

  it('passes an expanding migration, and drops of what the previous release never used', () => {
    expect(migrationProblems(fixture('expand.sql'), previous)).toEqual([]);
  });

  it.each([
    ['drop-column.sql', 'drops column commands.outcome'],
    ['drop-table.sql', 'drops table command_attempts'],
    ['rename-column.sql', 'renames column commands.command_id'],
    ['rename-table.sql', 'renames table command_attempts'],
  ])('fails %s, naming what it takes away', (name, problem) => {
    const problems = migrationProblems(fixture(name), previous);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain(problem);
  });
});
