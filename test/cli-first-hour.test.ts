import express from 'express';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { createHttpApp } from '../src/http/http-app.js';
import { createLogger } from '../src/logger.js';
import { startBanner } from '../src/cli/start-banner.js';
import { closeServer, serveApp } from './e2e/browser.js';
import { ROOT, runCli } from './support/cli.js';

/** What a newcomer meets first: the version, the help's pointers, and the bare address. */
describe('the first things a newcomer tries', () => {
  describe('when they ask rentbridge --version', () => {
    it("prints package.json's version and exits 0", async () => {
      const { version } = JSON.parse(await readFile(`${ROOT}package.json`, 'utf8')) as { version: string };
      const result = await runCli(['--version']);
      expect(result.code).toBe(0);
      expect(result.stdout.trim()).toBe(version);
    });
  });

  describe('when they ask rentbridge --help', () => {
    it('points at the README, its configuration table and the environment variables', async () => {
      const result = await runCli(['--help']);
      expect(result.code).toBe(0);
      expect(result.stdout).toContain('environment variables');
      expect(result.stdout).toContain('README');
      // Every file and README heading it names is there (issue 54: it named a heading that was not).
      expect(result.stdout).toContain('docs/configuration.md');
      const readme = await readFile(`${ROOT}README.md`, 'utf8');
      for (const [, heading] of result.stdout.matchAll(/README's "([^"]+)"/g))
        expect(readme, heading).toContain(`\n## ${heading}\n`);
      for (const [path] of result.stdout.matchAll(/docs\/[\w./-]+\.md/g))
        expect(existsSync(`${ROOT}${path}`), path).toBe(true);
    });
  });

  describe('when rentbridge start prints its banner', () => {
    it('names only files and README headings that exist', async () => {
      const banner = startBanner({ console: 'c', metrics: 'm', ready: 'r' }, true);
      const readme = await readFile(`${ROOT}README.md`, 'utf8');
      const headings = [...banner.matchAll(/README\.md, "([^"]+)"/g)].map((m) => m[1]!);
      expect(headings.length).toBeGreaterThan(0);
      for (const heading of headings) expect(readme, heading).toContain(`\n## ${heading}\n`);
      for (const [path] of banner.matchAll(/docs\/[\w./-]+\.md/g))
        expect(existsSync(`${ROOT}${path}`), path).toBe(true);
    });
  });

  describe('when a browser opens the bare address of the process serving the console', () => {
    it('is redirected to /ops/', async () => {
      const app = createHttpApp({
        logger: createLogger({ level: 'silent' }),
        mounts: [{ path: '/ops', router: express.Router() }],
      });
      const { server, base } = await serveApp(app);
      try {
        const res = await fetch(`${base}/`, { redirect: 'manual' });
        expect(res.status).toBe(302);
        expect(res.headers.get('location')).toBe('/ops/');
      } finally {
        await closeServer(server);
      }
    });
  });
});
