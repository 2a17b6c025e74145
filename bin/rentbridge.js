#!/usr/bin/env node
// The `rentbridge` command. Runs the compiled CLI (`npm run build` first).
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
