import { mkdir, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { publishedSchemas } from '../src/contracts/published-schemas.js';
import { renderJsonSchemas } from '../src/contracts/json-schemas.js';

/**
 * Writes docs/schemas/<name>.json from the zod schemas of every event and, from the command-type
 * table, of every command type's command and PMS webhook (`npx tsx scripts/export-schemas.ts`);
 * docs/asyncapi.yaml references them.
 */
const dir = fileURLToPath(new URL('../docs/schemas/', import.meta.url));
await mkdir(dir, { recursive: true });
for (const [name, text] of Object.entries(await renderJsonSchemas(publishedSchemas()))) {
  await writeFile(`${dir}${name}.json`, text);
  console.log(`docs/schemas/${name}.json`);
}
