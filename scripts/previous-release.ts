import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** Round three's main: the release the first tagged one (v0.5.0) upgrades from (docs/releasing.md). */
export const FIRST_BASELINE = '82d0ee2';

/**
 * The release this checkout is checked against (the upgrade test, the migration lint, the contract
 * diff): PREVIOUS_RELEASE when given, else the newest `vX.Y.Z` tag other than this checkout's own
 * version, else FIRST_BASELINE.
 */
export function previousRelease(repoRoot: string): string {
  const given = process.env.PREVIOUS_RELEASE;
  if (given) return given;
  const own = (JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { version: string })
    .version;
  const tags = execFileSync('git', ['tag', '--list', 'v*', '--sort=-v:refname'], {
    cwd: repoRoot,
    encoding: 'utf8',
  })
    .split('\n')
    .filter((t) => /^v\d+\.\d+\.\d+$/.test(t) && t !== `v${own}`);
  return tags[0] ?? FIRST_BASELINE;
}

/** A file as it was in `ref` (`git show ref:path`); null when it did not exist there. */
export function fileAt(repoRoot: string, ref: string, path: string): string | null {
  try {
    return execFileSync('git', ['show', `${ref}:${path}`], {
      cwd: repoRoot,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      maxBuffer: 64 * 1024 * 1024,
    });
  } catch {
    return null;
  }
}

/** The entries of a folder in `ref` (names only). */
export function folderAt(repoRoot: string, ref: string, path: string): string[] {
  return execFileSync('git', ['ls-tree', '--name-only', `${ref}:${path}`], {
    cwd: repoRoot,
    encoding: 'utf8',
  })
    .split('\n')
    .filter(Boolean);
}
