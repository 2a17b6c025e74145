/**
 * The rule behind `scripts/check-migrations.ts` (docs/releasing.md, "Migrations keep the last
 * release running"): a migration expands, and contracts one release later. A migration new since
 * the previous release must not drop or rename a table or a column that release still uses (its
 * prisma/schema.prisma): it runs beneath that release while it still serves.
 */

/** Tables and their columns, as a release's prisma/schema.prisma maps them. */
export type UsedSchema = Map<string, Set<string>>;

/** The tables and columns a prisma/schema.prisma uses (relation fields apart). */
export function usedSchema(prismaSchema: string): UsedSchema {
  const used: UsedSchema = new Map();
  const models = new Set([...prismaSchema.matchAll(/^model\s+(\w+)\s*\{/gm)].map((m) => m[1]!));
  for (const m of prismaSchema.matchAll(/^model\s+(\w+)\s*\{([\s\S]*?)^\}/gm)) {
    const body = m[2]!;
    const table = /@@map\("([^"]+)"\)/.exec(body)?.[1] ?? m[1]!;
    const columns = new Set<string>();
    for (const line of body.split('\n')) {
      const field = /^\s*(\w+)\s+(\w+)(\[\])?\??/.exec(line);
      if (!field || line.trim().startsWith('//') || line.trim().startsWith('@@')) continue;
      if (models.has(field[2]!) || field[3]) continue;
      columns.add(/@map\("([^"]+)"\)/.exec(line)?.[1] ?? field[1]!);
    }
    used.set(table, columns);
  }
  return used;
}

const IDENT = String.raw`(?:"(?:[^"]|"")+"|[A-Za-z_][\w$]*)`;
/** A name, perhaps schema-qualified; captured whole. */
const QUALIFIED = String.raw`(${IDENT}(?:\.${IDENT})?)`;

/** A name as PostgreSQL reads it: without its schema, unquoted, unquoted names folded to lower case. */
function nameOf(written: string): string {
  const last = written.match(new RegExp(IDENT, 'g'))!.at(-1)!;
  return last.startsWith('"') ? last.slice(1, -1).replace(/""/g, '"') : last.toLowerCase();
}

/** The statements of a migration, comments removed (strings kept whole). */
function statements(sql: string): string[] {
  const noComments = sql.replace(/--[^\n]*/g, '').replace(/\/\*[\s\S]*?\*\//g, '');
  return noComments
    .split(';')
    .map((s) => s.replace(/\s+/g, ' ').trim())
    .filter(Boolean);
}

/**
 * What a migration does that the previous release could not survive: each problem names the
 * statement and the table or column it takes away.
 */
export function migrationProblems(sql: string, previous: UsedSchema): string[] {
  const problems: string[] = [];
  const used = (table: string, column?: string) =>
    previous.has(table) && (column === undefined || previous.get(table)!.has(column));
  for (const statement of statements(sql)) {
    const dropTable = /^DROP TABLE (?:IF EXISTS )?(.*?)(?: CASCADE| RESTRICT)?$/i.exec(statement);
    if (dropTable) {
      for (const part of dropTable[1]!.split(',')) {
        const table = nameOf(part.trim());
        if (used(table)) problems.push(`drops table ${table}, which the previous release uses: ${statement}`);
      }
      continue;
    }
    const alter = new RegExp(String.raw`^ALTER TABLE (?:IF EXISTS )?(?:ONLY )?${QUALIFIED} (.*)$`, 'i').exec(
      statement,
    );
    if (!alter) continue;
    const table = nameOf(alter[1]!);
    const actions = alter[2]!;
    if (/^RENAME TO /i.test(actions)) {
      if (used(table)) problems.push(`renames table ${table}, which the previous release uses: ${statement}`);
      continue;
    }
    const renameColumn = new RegExp(String.raw`^RENAME (?:COLUMN )?(${IDENT}) TO `, 'i').exec(actions);
    if (renameColumn) {
      const column = nameOf(renameColumn[1]!);
      if (used(table, column))
        problems.push(`renames column ${table}.${column}, which the previous release uses: ${statement}`);
      continue;
    }
    // `DROP [COLUMN] [IF EXISTS] name` in the list of actions; DROP CONSTRAINT / DEFAULT / NOT NULL
    // / IDENTITY / EXPRESSION take nothing the release reads.
    for (const drop of actions.matchAll(
      new RegExp(String.raw`(?:^|, ?)DROP (?:COLUMN )?(?:IF EXISTS )?(${IDENT})`, 'gi'),
    )) {
      const column = nameOf(drop[1]!);
      if (/^(constraint|default|not|identity|expression)$/i.test(column)) continue;
      if (used(table, column))
        problems.push(`drops column ${table}.${column}, which the previous release uses: ${statement}`);
    }
  }
  return problems;
}
