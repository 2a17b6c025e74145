import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { publishedSchemas } from '../../src/contracts/published-schemas.js';
import { renderJsonSchemas } from '../../src/contracts/json-schemas.js';

describe('event JSON Schemas', () => {
  describe('when the zod schemas are exported', () => {
    it('match the files in docs/schemas (run `npx tsx scripts/export-schemas.ts` after a change)', async () => {
      const rendered = await renderJsonSchemas(publishedSchemas());
      for (const [name, text] of Object.entries(rendered)) {
        expect(await readFile(`docs/schemas/${name}.json`, 'utf8'), name).toBe(text);
      }
    });

    it('are each referenced by docs/asyncapi.yaml', async () => {
      const asyncapi = await readFile('docs/asyncapi.yaml', 'utf8');
      const rendered = await renderJsonSchemas(publishedSchemas());
      const unreferenced = Object.keys(rendered).filter(
        (name) => !asyncapi.includes(`./schemas/${name}.json`),
      );
      expect(unreferenced).toEqual([]);
    });
  });
});
