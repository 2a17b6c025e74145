import { mkdtempSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { asyncApiChanges, schemaChanges, unannounced, upgradingNotes } from '../../scripts/contract-diff.js';

const outcome = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  properties: {
    command_id: { type: 'string' },
    status: { type: 'string', enum: ['applied', 'rejected', 'unverified'] },
    attempts: { type: 'integer' },
  },
  required: ['command_id', 'status'],
};

/** Two folders of schemas: the previous release's outcome schema and this one's. */
function folders(after: object) {
  const root = mkdtempSync(join(tmpdir(), 'contracts-test-'));
  for (const [dir, schema] of [
    ['before', outcome],
    ['after', after],
  ] as const) {
    mkdirSync(join(root, dir));
    writeFileSync(join(root, dir, 'command-outcome.json'), JSON.stringify(schema));
  }
  return [join(root, 'before'), join(root, 'after')] as const;
}

describe('the contract check against the previous release (scripts/check-contracts.ts)', () => {
  it('passes a schema that only grows (a new optional field)', async () => {
    const grown = { ...outcome, properties: { ...outcome.properties, note: { type: 'string' } } };
    expect(await schemaChanges(...folders(grown))).toEqual([]);
  });

  it.each([
    [
      'a narrowed enum',
      { ...outcome, properties: { ...outcome.properties, status: { type: 'string', enum: ['applied'] } } },
      'enum narrowed at status: "rejected", "unverified"',
    ],
    [
      'a new required field',
      { ...outcome, required: ['command_id', 'status', 'attempts'] },
      'refuses what it accepted',
    ],
    [
      'a retyped field',
      { ...outcome, properties: { ...outcome.properties, attempts: { type: 'string' } } },
      'refuses what it accepted',
    ],
    [
      'a removed field',
      {
        ...outcome,
        properties: { command_id: outcome.properties.command_id, status: outcome.properties.status },
      },
      'field attempts removed',
    ],
  ])('fails %s', async (_name, after, what) => {
    const changes = await schemaChanges(...folders(after));
    expect(changes.map((c) => c.subject)).toContain('docs/schemas/command-outcome.json');
    expect(changes.map((c) => c.what).join('\n')).toContain(what);
  });

  it("finds round four's outcome id change in the AsyncAPI examples", async () => {
    const root = mkdtempSync(join(tmpdir(), 'contracts-asyncapi-'));
    const doc = (id: string) => `asyncapi: 3.0.0
info: { title: t, version: 1.0.0 }
channels:
  outcomes:
    address: outcomes
    messages:
      outcome: { $ref: '#/components/messages/outcome' }
components:
  messages:
    outcome:
      name: rentbridge.outcome.rental-payment
      payload: { type: object }
      examples:
        - payload: { id: '${id}', data: { command_id: pay-1, status: applied } }
`;
    writeFileSync(join(root, 'before.yaml'), doc('outcome.pay-1'));
    writeFileSync(join(root, 'after.yaml'), doc('outcome.pay-1.applied'));
    const changes = await asyncApiChanges(join(root, 'before.yaml'), join(root, 'after.yaml'));
    expect(changes).toEqual([
      {
        subject: 'rentbridge.outcome.rental-payment',
        what: 'CloudEvent id format changed: outcome.<command-id> -> outcome.<command-id>.<status>',
      },
    ]);
    const changelog = `# Changelog\n\n## [0.5.0] - 2026-11-29\n\n### Upgrading\n\n- \`rentbridge.outcome.rental-payment\`: ids end in the status; accept the suffix.\n\n## [0.1.0]\n\n### Upgrading\n\n- nothing\n`;
    expect(unannounced(changes, upgradingNotes(changelog, '0.5.0'))).toEqual([]);
    expect(unannounced(changes, upgradingNotes(changelog, '0.1.0'))).toEqual(changes);
  });
});
