import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DEAD_LETTER_REASONS } from '../../src/dead-letters/dead-letter-headers.js';
import { COMMAND_KINDS } from '../../src/events/outcomes.js';

/**
 * The console's filter lists are written in its static page: each must offer exactly the values
 * the service knows (a new command type or dead-letter reason the page lacks could not be found
 * from the console).
 */
const page = readFileSync(new URL('../../src/ops/console/index.html', import.meta.url), 'utf8');

function optionsOf(selectId: string): string[] {
  const select = new RegExp(`<select[^>]*id="${selectId}"[^>]*>([\\s\\S]*?)</select>`).exec(page);
  if (!select) throw new Error(`no <select id="${selectId}"> in the console page`);
  return [...select[1]!.matchAll(/<option value="([^"]*)"/g)].map((m) => m[1]!);
}

describe("the console's filters", () => {
  it('offer every command type, and only those', () => {
    expect(optionsOf('f-command-type')).toEqual(['', ...COMMAND_KINDS]);
  });

  it('offer every dead-letter reason, and only those', () => {
    expect(optionsOf('f-reason')).toEqual(['', ...DEAD_LETTER_REASONS]);
  });
});
