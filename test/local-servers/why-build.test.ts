import { mkdir, mkdtemp, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { whyBuild } from '../../bin/why-build.js';

/** `npm start` builds when dist/ is missing or older than src/, and only then (bin/rentbridge.js). */
describe('whether npm start builds first', () => {
  let root: string;
  const file = async (path: string, at: number) => {
    const full = join(root, path);
    await mkdir(dirname(full), { recursive: true });
    await writeFile(full, '');
    await utimes(full, at, at);
  };

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'rentbridge-build-'));
    await file('tsconfig.build.json', 1000);
    await mkdir(join(root, 'node_modules', 'typescript'), { recursive: true });
    await file('src/cli/main.ts', 1000);
    await file('consumers/example.ts', 1000);
    await file('prisma/schema.prisma', 1000);
  });
  afterEach(() => rm(root, { recursive: true, force: true }));

  describe('in a source checkout', () => {
    it('builds when dist/ is missing', () => {
      expect(whyBuild(root)).toBe('dist/ is missing');
    });

    it('does not build when dist/ is newer than every source', async () => {
      await file('dist/src/cli/main.js', 2000);
      expect(whyBuild(root)).toBeNull();
    });

    it.each(['src/cli/main.ts', 'src/deep/er/module.ts', 'consumers/example.ts', 'prisma/schema.prisma'])(
      'builds when %s changed after the last build',
      async (changed) => {
        await file('dist/src/cli/main.js', 2000);
        await file(changed, 3000);
        expect(whyBuild(root)).toBe('src/ changed since the last build');
      },
    );

    it('takes the newest output of dist/ as the build time, and ignores files that are not sources', async () => {
      await file('dist/src/cli/main.js', 2000);
      await file('dist/src/other.js', 4000);
      await file('src/cli/main.ts', 3000);
      await file('src/ops/console/app.css', 5000);
      expect(whyBuild(root)).toBeNull();
    });
  });

  describe('in an installed image (no tsconfig.build.json or no TypeScript)', () => {
    it('never builds', async () => {
      await rm(join(root, 'tsconfig.build.json'));
      expect(whyBuild(root)).toBeNull();
      await file('tsconfig.build.json', 1000);
      await rm(join(root, 'node_modules', 'typescript'), { recursive: true });
      expect(whyBuild(root)).toBeNull();
    });
  });
});
