/**
 * `npm run lint` fails when an import goes the wrong way between rooms (docs/code-map.md,
 * docs/decisions/040-the-house-made-plain.md). Every folder of src/ is a room on a floor; a room
 * imports only rooms on lower floors (type-only imports included). The guard's three rooms and the
 * development-only rooms (src/dev/) are rooms of their own, and only the CLI may import src/dev/.
 * A new folder fails until it is given a floor here: that is where its place in the house is said.
 *
 *   npx tsx scripts/check-import-direction.ts            # check
 *   npx tsx scripts/check-import-direction.ts --floors   # print the house, floor by floor
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { parseDependencyTree, shortenTree } from 'dpdm';

/** Bottom to top. The files directly in src/ are the foundation, each a room of its own. */
export const FLOORS: readonly (readonly string[])[] = [
  ['csv-cell', 'personal-data', 'terminal-text'],
  ['backoff', 'config', 'errors', 'log-format', 'telemetry', 'topic-prefix', 'version'],
  ['logger', 'metrics', 'telemetry-sdk'],
  ['db', 'dev/local-servers'],
  ['audit', 'partner', 'privacy', 'retention'],
  ['contracts', 'guard/read-backs', 'http'],
  ['dev/sandbox', 'guard/machine', 'kafka', 'outbox'],
  ['changes', 'dev/demo', 'guard/store', 'relay'],
  ['dead-letters', 'guard', 'poller', 'receiver'],
  ['command-types', 'event-trace', 'resync'],
  ['callbacks', 'command-consumer', 'erasure', 'partner-probe'],
  ['pms', 'reconcile'],
  ['ops'],
  ['app'],
  ['cli'],
];

const SUBDIVIDED = new Set(['guard', 'dev']);

/** The room of a file of src/: `src/guard/store/x.ts` → `guard/store`; `src/errors.ts` → `errors`. */
export function roomOf(file: string): string {
  const parts = file
    .replace(/^src\//, '')
    .replace(/\.ts$/, '')
    .split('/');
  if (parts.length === 1) return parts[0]!;
  if (SUBDIVIDED.has(parts[0]!) && parts.length > 2) return `${parts[0]}/${parts[1]}`;
  return parts[0]!;
}

const floorOf = new Map(FLOORS.flatMap((rooms, floor) => rooms.map((room) => [room, floor] as const)));

const cwd = process.cwd();
const tree = shortenTree(
  cwd,
  await parseDependencyTree(['src/**/*.ts'], {
    context: cwd,
    transform: false,
    tsconfig: path.join(cwd, 'tsconfig.json'),
  }),
);

const problems: string[] = [];
const unplaced = new Set<string>();
for (const [file, deps] of Object.entries(tree)) {
  if (!file.startsWith('src/') || !file.endsWith('.ts')) continue;
  const from = roomOf(file);
  if (!floorOf.has(from)) unplaced.add(from);
  for (const dep of deps ?? []) {
    if (!dep.id?.startsWith('src/')) continue;
    const to = roomOf(dep.id);
    if (to === from) continue;
    if (!floorOf.has(to)) continue; // said once, below
    if (to.startsWith('dev/') && !from.startsWith('dev/') && from !== 'cli') {
      problems.push(
        `${file} imports ${dep.id}: only the CLI may import the development-only rooms (src/dev/)`,
      );
    } else if (floorOf.has(from) && floorOf.get(to)! >= floorOf.get(from)!) {
      problems.push(
        `${file} imports ${dep.id}: ${from} (floor ${floorOf.get(from)}) may import only lower floors, ` +
          `and ${to} is on floor ${floorOf.get(to)}`,
      );
    }
  }
}
for (const room of unplaced) {
  const where = existsSync(`src/${room}.ts`) ? `src/${room}.ts` : `src/${room}/`;
  problems.push(`${where} is on no floor: give it one in scripts/check-import-direction.ts`);
}

if (process.argv.includes('--floors')) {
  FLOORS.forEach((rooms, floor) => console.log(`${String(floor).padStart(2)}  ${rooms.join('  ')}`));
}
if (problems.length > 0) {
  console.error(`imports against the house's direction (${problems.length}):`);
  for (const p of problems.sort()) console.error(`  ${p}`);
  process.exit(1);
}
console.log(
  `import direction: ${Object.keys(tree).filter((f) => f.startsWith('src/')).length} files in ${floorOf.size} rooms on ${FLOORS.length} floors, every import downward`,
);
