import { spawnSync } from 'node:child_process';
import { statSync } from 'node:fs';
import { dirname, parse } from 'node:path';

/**
 * As root, the embedded PostgreSQL runs as the `postgres` user, which must walk every folder down
 * to its programs (in node_modules) and its data. A project in `/root/…` or a `mktemp -d` folder
 * (mode 0700) shuts it out: initdb then fails with a bare `spawn …/initdb EACCES` (issue 41).
 * This names the first folder it cannot enter, and says what to do.
 */

/** The first folder on the way to `path` that `user` may not enter, or null when it reaches it. */
export function firstClosedFolder(path: string, user: { uid: number; gid: number }): string | null {
  const folders: string[] = [];
  for (let dir = dirname(path); ; dir = dirname(dir)) {
    folders.unshift(dir);
    if (dir === parse(dir).root) break;
  }
  for (const folder of folders) {
    const check = spawnSync('test', ['-x', folder], { uid: user.uid, gid: user.gid });
    if (check.status !== 0) return folder;
  }
  return null;
}

function modeOf(folder: string): string {
  try {
    return (statSync(folder).mode & 0o777).toString(8).padStart(4, '0');
  } catch {
    return 'unknown';
  }
}

/** What to say when the server's user cannot reach `what` (the programs, or the data folder). */
export function closedFolderAdvice(folder: string, what: string): string {
  return `the user \`postgres\` (PostgreSQL refuses to run as root) cannot enter ${folder} (mode ${modeOf(folder)}), on the way to ${what}: let it pass (chmod o+x ${folder}), move the project to a folder other users can enter, run as a user other than root, or set DATABASE_URL to a PostgreSQL server. \`--fresh\` cannot help: it is the folder's mode`;
}
