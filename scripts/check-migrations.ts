/**
 * `npm run lint` fails when a migration new since the previous release drops or renames a table or
 * a column that release still uses (scripts/migration-rules.ts; docs/releasing.md): migrations run
 * beneath the running release during an upgrade, so they expand now and contract one release later.
 *
 *   npx tsx scripts/check-migrations.ts        # against the newest older release tag (else 82d0ee2)
 *   PREVIOUS_RELEASE=v0.5.0 npx tsx scripts/check-migrations.ts
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileAt, folderAt, previousRelease } from './previous-release.js';
import { migrationProblems, usedSchema } from './migration-rules.js';

const root = process.cwd();
const ref = previousRelease(root);
const schema = fileAt(root, ref, 'prisma/schema.prisma');
if (schema === null) {
  console.error(
    `check-migrations: no prisma/schema.prisma at ${ref} (is the history fetched? git fetch --tags)`,
  );
  process.exit(2);
}
const previous = usedSchema(schema);
const released = new Set(folderAt(root, ref, 'prisma/migrations'));
const dir = join(root, 'prisma', 'migrations');
const fresh = readdirSync(dir, { withFileTypes: true })
  .filter((e) => e.isDirectory() && !released.has(e.name))
  .map((e) => e.name)
  .sort();

const problems = fresh.flatMap((name) =>
  migrationProblems(readFileSync(join(dir, name, 'migration.sql'), 'utf8'), previous).map(
    (p) => `${name}: ${p}`,
  ),
);
if (problems.length > 0) {
  console.error(
    `check-migrations: ${problems.length} change(s) the previous release (${ref}) cannot run beneath:\n  ` +
      problems.join('\n  ') +
      '\nExpand now (add the new table or column, write both), contract one release later (docs/releasing.md).',
  );
  process.exit(1);
}
console.log(
  `check-migrations: ${fresh.length} migration(s) since ${ref}, none drops or renames what it uses`,
);
