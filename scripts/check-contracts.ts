/**
 * CI's contract check (docs/releasing.md; decision 058): the exported JSON Schemas (docs/schemas/),
 * the AsyncAPI document and the OpenAPI document against the previous release's (`git archive`),
 * failing on a breaking change (a removed or retyped field, a narrowed enum, a new required field,
 * a changed id format) that CHANGELOG.md's "Upgrading" part of this version does not name.
 *
 *   npx tsx scripts/check-contracts.ts       # against the newest older release tag (else 82d0ee2)
 *   PREVIOUS_RELEASE=v0.5.0 npx tsx scripts/check-contracts.ts
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  asyncApiChanges,
  openApiChanges,
  schemaChanges,
  unannounced,
  upgradingNotes,
} from './contract-diff.js';
import { previousRelease } from './previous-release.js';

const root = process.cwd();
const ref = previousRelease(root);
const version = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;
const before = mkdtempSync(join(tmpdir(), 'rentbridge-contracts-'));
try {
  const archive = execFileSync(
    'git',
    ['archive', ref, 'docs/asyncapi.yaml', 'docs/openapi.yaml', 'docs/schemas'],
    {
      cwd: root,
      maxBuffer: 64 * 1024 * 1024,
    },
  );
  execFileSync('tar', ['-x', '-C', before], { input: archive });
  const changes = [
    ...(await schemaChanges(join(before, 'docs/schemas'), join(root, 'docs/schemas'))),
    ...(await asyncApiChanges(join(before, 'docs/asyncapi.yaml'), join(root, 'docs/asyncapi.yaml'))),
    ...(await openApiChanges(join(before, 'docs/openapi.yaml'), join(root, 'docs/openapi.yaml'))),
  ];
  const notes = upgradingNotes(readFileSync(join(root, 'CHANGELOG.md'), 'utf8'), version);
  const missing = unannounced(changes, notes);
  console.log(`contracts: ${version} against ${ref}: ${changes.length} breaking change(s)`);
  for (const c of changes)
    console.log(`  ${missing.includes(c) ? 'NOT IN THE CHANGELOG' : 'announced'}  ${c.subject}: ${c.what}`);
  if (missing.length > 0) {
    console.error(
      `\ncheck-contracts: ${missing.length} breaking change(s) that CHANGELOG.md's [${version}] "Upgrading" does not name ` +
        '(name each subject there, with what consumers must do) — or keep the contract as it was.',
    );
    process.exitCode = 1;
  }
} finally {
  rmSync(before, { recursive: true, force: true });
}
