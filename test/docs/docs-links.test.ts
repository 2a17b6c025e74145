import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { configSchema } from '../../src/config/config.js';

/**
 * The documentation a reader follows from the README: every link leads somewhere, every section
 * of the Partner API spec the code cites has its heading in docs/partner-api.md, and every
 * environment variable rentbridge reads is documented.
 */

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

function filesUnder(folder: string, ext: RegExp): string[] {
  return (readdirSync(join(ROOT, folder), { recursive: true }) as string[])
    .filter((f) => ext.test(f))
    .map((f) => join(folder, f));
}

function read(file: string): string {
  return readFileSync(join(ROOT, file), 'utf8');
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as dashes. */
function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}_\- ]/gu, '')
    .replace(/ /g, '-');
}

function headings(markdown: string): string[] {
  const prose = markdown.replace(/```[\s\S]*?```/g, '');
  return [...prose.matchAll(/^#+ (.*)$/gm)].map((m) => m[1]!);
}

const MARKDOWN = ['README.md', ...filesUnder('docs', /\.md$/)];

describe('the documentation', () => {
  it('links only to files and headings that exist', () => {
    const broken: string[] = [];
    for (const file of MARKDOWN) {
      const text = read(file).replace(/```[\s\S]*?```/g, '');
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/.test(target!)) continue;
        const [path, anchor] = target!.split('#') as [string, string | undefined];
        const to = path ? normalize(join(dirname(file), path)) : file;
        if (!existsSync(join(ROOT, to))) broken.push(`${file}: ${target} (no such file)`);
        else if (anchor && to.endsWith('.md') && !headings(read(to)).map(anchorOf).includes(anchor))
          broken.push(`${file}: ${target} (no such heading in ${to})`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('has a heading in docs/partner-api.md for every section of the spec the code cites', () => {
    const sections = new Set(
      headings(read('docs/partner-api.md')).flatMap((h) => h.match(/^\d+(?:\.\d+)*/)?.[0] ?? []),
    );
    const cited = new Map<string, string>();
    const files = ['src', 'test', 'bench', 'scripts', 'consumers'].flatMap((f) => filesUnder(f, /\.ts$/));
    for (const file of files) {
      const text = read(file);
      for (const m of text.matchAll(
        /spec (\d+(?:\.\d+)*)((?:(?:, | and | or |\/)\d+(?:\.\d+)*)*)(?: rule (\d+))?/g,
      )) {
        const numbers = m[4] ? [`${m[1]}.${m[4]}`] : [m[1]!, ...(m[2]!.match(/\d+(?:\.\d+)*/g) ?? [])];
        for (const n of numbers) cited.set(n, relative(ROOT, join(ROOT, file)));
      }
    }
    expect(cited.size).toBeGreaterThan(20);
    const missing = [...cited].filter(([n]) => !sections.has(n)).map(([n, file]) => `${n} (${file})`);
    expect(missing).toEqual([]);
  });

  it('documents every environment variable rentbridge reads', () => {
    const documented = read('docs/configuration.md') + read('docs/callbacks.md');
    const undocumented = Object.keys(configSchema.shape).filter(
      (name) => !documented.includes(`\`${name}\``),
    );
    expect(undocumented).toEqual([]);
  });

  it('keeps the README a front door: the two commands, a signed webhook block CI runs, the way on', () => {
    const readme = read('README.md');
    expect(readme).toContain('npm ci && npm start');
    expect(readme).toMatch(/<!-- ci:webhook -->\s*```sh\n[\s\S]*payment_id=pay-\$\(date/);
    expect(readme).toContain('npx rentbridge');
    expect(readme.split('\n').length).toBeLessThan(250);
  });
});
