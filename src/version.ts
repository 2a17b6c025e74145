import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let cached: string | undefined;

/**
 * rentbridge's version: the `version` of the package.json that names rentbridge, found upwards from
 * this file (src/ under tsx, dist/src/ when built). `rentbridge --version` and the console's footer
 * show it; a release sets it (docs/releasing.md).
 */
export function rentbridgeVersion(): string {
  if (cached) return cached;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest)) {
      const pkg = JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'rentbridge' && pkg.version) return (cached = pkg.version);
    }
    const parent = dirname(dir);
    if (parent === dir) throw new Error('no rentbridge package.json above src/version.ts');
    dir = parent;
  }
}
