import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

/**
 * The console's filter lists come from the service (`GET /ops/api/filters`, checked in
 * ops-router.test.ts, and filled in the browser in test/e2e/ops-console.test.ts): the page itself
 * names no command type and no reason, so a new one cannot be missing from it.
 */
const page = readFileSync(new URL('../../src/ops/console/index.html', import.meta.url), 'utf8');

function optionsOf(selectId: string): string[] {
  const select = new RegExp(`<select[^>]*id="${selectId}"[^>]*>([\\s\\S]*?)</select>`).exec(page);
  if (!select) throw new Error(`no <select id="${selectId}"> in the console page`);
  return [...select[1]!.matchAll(/<option value="([^"]*)"/g)].map((m) => m[1]!);
}

describe("the console's filters", () => {
  it('are written in the page only as "any": the values come from the ops API', () => {
    expect(optionsOf('f-command-type')).toEqual(['']);
    expect(optionsOf('f-reason')).toEqual(['']);
  });
});
