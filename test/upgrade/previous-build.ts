import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export { previousRelease } from '../../scripts/previous-release.js';

export interface PreviousBuild {
  dir: string;
  ref: string;
  /** Removes the worktree (kept when it was given through UPGRADE_BUILD_DIR). */
  remove(): void;
}

/**
 * The previous release, checked out with `git worktree add` into a temporary folder and installed
 * with `npm ci` (its own lock file; the registry must answer). UPGRADE_BUILD_DIR names a folder to
 * keep it in between runs (a developer's repeat runs): reused when it holds that commit, installed.
 */
export function checkOutPrevious(repoRoot: string, ref: string, log: (m: string) => void): PreviousBuild {
  const kept = process.env.UPGRADE_BUILD_DIR;
  const dir = kept ?? join(mkdtempSync(join(tmpdir(), 'rentbridge-upgrade-')), 'previous');
  const commit = execFileSync('git', ['rev-parse', `${ref}^{commit}`], {
    cwd: repoRoot,
    encoding: 'utf8',
  }).trim();
  const head = existsSync(join(dir, '.git'))
    ? execFileSync('git', ['rev-parse', 'HEAD'], { cwd: dir, encoding: 'utf8' }).trim()
    : null;
  if (head !== commit) {
    if (head) execFileSync('git', ['worktree', 'remove', '--force', dir], { cwd: repoRoot });
    log(`git worktree add ${dir} ${ref} (${commit.slice(0, 12)})`);
    execFileSync('git', ['worktree', 'add', '--detach', dir, commit], { cwd: repoRoot, stdio: 'ignore' });
  }
  if (!existsSync(join(dir, 'node_modules', '.package-lock.json'))) {
    log('npm ci in the previous release');
    const began = Date.now();
    execFileSync('npm', ['ci', '--no-audit', '--no-fund'], {
      cwd: dir,
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    log(`npm ci: ${((Date.now() - began) / 1000).toFixed(0)} s`);
  }
  return {
    dir,
    ref,
    remove() {
      if (kept) return;
      execFileSync('git', ['worktree', 'remove', '--force', dir], { cwd: repoRoot });
      rmSync(join(dir, '..'), { recursive: true, force: true });
    },
  };
}
