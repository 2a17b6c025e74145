// Whether `bin/rentbridge.js` must build first (docs/decisions/023-two-commands.md): in a source
// checkout (tsconfig.build.json and TypeScript present) when dist/ is missing or older than src/,
// and only then. The Docker image has no tsconfig.build.json and never builds.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** The newest modification time of the files under `dir` whose names pass `keep`. */
function newest(dir, keep) {
  let latest = 0;
  if (!existsSync(dir)) return latest;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) latest = Math.max(latest, newest(path, keep));
    else if (keep(entry.name)) latest = Math.max(latest, statSync(path).mtimeMs);
  }
  return latest;
}

/** Why the project in `root` needs a build ('dist/ is missing', ...), or null when it needs none. */
export function whyBuild(root) {
  const at = (...parts) => join(root, ...parts);
  if (!existsSync(at('tsconfig.build.json')) || !existsSync(at('node_modules', 'typescript'))) return null;
  if (!existsSync(at('dist', 'src', 'cli', 'main.js'))) return 'dist/ is missing';
  const ts = (name) => name.endsWith('.ts');
  const source = Math.max(
    newest(at('src'), ts),
    newest(at('consumers'), ts),
    existsSync(at('prisma', 'schema.prisma')) ? statSync(at('prisma', 'schema.prisma')).mtimeMs : 0,
  );
  // tsc writes every output it emits, so the newest file in dist/ is the last build's time.
  return source > newest(at('dist'), (name) => name.endsWith('.js'))
    ? 'src/ changed since the last build'
    : null;
}
