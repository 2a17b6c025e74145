#!/usr/bin/env node
// The `rentbridge` command. Runs the compiled CLI; in a source checkout (tsconfig.build.json and
// TypeScript present) it first builds when dist/ is missing or older than src/, and only then.
import { spawnSync } from 'node:child_process';
import { fileURLToPath, URL } from 'node:url';
import { whyBuild } from './why-build.js';

const root = fileURLToPath(new URL('..', import.meta.url));

const reason = whyBuild(root);
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
