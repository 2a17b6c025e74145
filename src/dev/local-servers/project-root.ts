import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The project's folder (where package.json names rentbridge), from src/ when run by tsx and from
 * dist/src/ when built: the local servers keep their data and scripts/kafka.sh there.
 */
export function projectRoot(from: string = fileURLToPath(import.meta.url)): string {
  let dir = dirname(from);
  for (;;) {
    const manifest = join(dir, 'package.json');
    if (
      existsSync(manifest) &&
      (JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name === 'rentbridge'
    )
      return dir;
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`no rentbridge package.json above ${from}`);
    dir = parent;
  }
}
