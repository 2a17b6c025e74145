#!/usr/bin/env node
// The `rentbridge` command. Runs the compiled CLI; in a source checkout (tsconfig.build.json and
// TypeScript present) it first builds when dist/ is missing or older than src/, and only then.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, URL } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const at = (...parts) => join(root, ...parts);

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

function whyBuild() {
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

const reason = whyBuild();
if (reason) {
  const began = Date.now();
  console.error(`rentbridge: building (${reason}): npm run build ...`);
  // The build's output goes to stderr: stdout stays the command's own (`dlq list --json`).
  const build = spawnSync('npm', ['run', '--silent', 'build'], { cwd: root, stdio: ['ignore', 2, 2] });
  if (build.status !== 0) {
    console.error(
      'rentbridge: the build failed (see above); fix it, or run `npx tsx src/cli/main.ts` from source',
    );
    process.exit(1);
  }
  console.error(`rentbridge: built in ${((Date.now() - began) / 1000).toFixed(1)} s`);
}

try {
  await import('../dist/src/cli/main.js');
} catch (error) {
  if (error?.code === 'ERR_MODULE_NOT_FOUND' && String(error.message).includes('dist/src/cli/main.js')) {
    console.error(
      'rentbridge is not built: run `npm run build` first (or `npx tsx src/cli/main.ts` from source)',
    );
    process.exit(2);
  }
  throw error;
}
