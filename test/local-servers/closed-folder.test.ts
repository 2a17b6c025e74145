import { execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync, chmodSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { closedFolderAdvice, firstClosedFolder } from '../../src/dev/local-servers/reachable.js';

/** The `postgres` user, when this runs as root on a machine that has one (else the test skips). */
function postgresUser(): { uid: number; gid: number } | null {
  if (process.getuid?.() !== 0) return null;
  try {
    const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
    return { uid: id('-u'), gid: id('-g') };
  } catch {
    return null;
  }
}

const user = postgresUser();

describe.skipIf(!user)('as root, a project in a folder the postgres user cannot enter', () => {
  // mkdtemp makes a 0700 folder, as `mktemp -d` does: the case of issue 41.
  const closed = mkdtempSync(join(tmpdir(), 'rb-closed-'));
  const program = join(closed, 'node_modules', 'bin', 'initdb');
  mkdirSync(join(closed, 'node_modules', 'bin'), { recursive: true });
  writeFileSync(program, '');
  afterAll(() => rmSync(closed, { recursive: true, force: true }));

  it('names the folder that shuts it out', () => {
    expect(firstClosedFolder(program, user!)).toBe(closed);
  });

  it('says what is wrong and what to do, and that --fresh cannot help', () => {
    const advice = closedFolderAdvice(closed, 'the PostgreSQL programs');
    expect(advice).toContain(`cannot enter ${closed} (mode 0700)`);
    expect(advice).toContain(`chmod o+x ${closed}`);
    expect(advice).toContain('run as a user other than root');
    expect(advice).toContain('DATABASE_URL');
    expect(advice).toContain('`--fresh` cannot help');
  });

  it('finds nothing closed once the folder lets others pass', () => {
    chmodSync(closed, 0o711);
    try {
      expect(firstClosedFolder(program, user!)).toBeNull();
    } finally {
      chmodSync(closed, 0o700);
    }
  });
});
