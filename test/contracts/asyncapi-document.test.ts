import { describe, expect, it } from 'vitest';
import { ajvErrors, loadContracts } from '../support/contracts.js';

describe('docs/asyncapi.yaml', () => {
  it('parses with @asyncapi/parser, and every example matches its own message', async () => {
    const contracts = await loadContracts();
    expect(contracts.channels.size).toBeGreaterThan(20);
    expect(contracts.traitHeaders).toEqual(expect.arrayContaining(['content-type', 'ce_id', 'ce_type']));
    const outcomeExamples = contracts.examples.filter((e) => e.type === 'rentbridge.outcome.rental-payment');
    expect(outcomeExamples.map((e) => e.name)).toEqual(
      expect.arrayContaining([
        'cardDeclined',
        'validationError',
        'legacyWithoutCode',
        'apiError',
        'unknownCode',
      ]),
    );
    for (const example of contracts.examples) {
      const validate = contracts.channels.get(example.channel)!.get(example.type)!;
      expect(validate(example.payload), `${example.name}: ${ajvErrors(validate)}`).toBe(true);
    }
  });
});
