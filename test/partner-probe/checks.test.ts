import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as assumptions from '../../src/partner/assumptions.js';
import { GUARD_ASSUMPTIONS } from '../../src/partner/assumptions.js';
import { checkOf, GUARD_CHECKS } from '../../src/partner-probe/checks/index.js';
import { runProbe } from '../../src/partner-probe/probe.js';
import { createSandboxControl, startSandbox, type Sandbox } from '../../src/dev/sandbox/index.js';

/** The assumptions each read-back rests on (the names it reads must come from them). */
const READ_BACKS = {
  'src/command-types/rental-payments/rental-payment-read-back.ts': [
    'PAYMENT_VISIBLE_ON_ENROLLMENT',
    'REPORT_MOVES_UPDATED_AT',
  ],
  'src/command-types/application-decisions/application-decision-read-back.ts': [
    'DECISION_VISIBLE_ON_APPLICATION',
    'DATE_FILTERS',
  ],
  'src/command-types/customer-registrations/customer-registration-read-back.ts': ['CUSTOMERS_NEWEST_FIRST'],
} as const;

const DESCRIPTION = new Set(['id', 'statement', 'breaksIfFalse', 'probeStep']);

/** Every name an assumption gives the read-back (its fields other than the description). */
function namesOf(assumption: object): string[] {
  return Object.entries(assumption).flatMap(([key, value]) =>
    DESCRIPTION.has(key)
      ? []
      : typeof value === 'string'
        ? [value]
        : typeof value === 'object'
          ? namesOf(value as object)
          : [],
  );
}

/**
 * The code without comments, the command's own fields, the guard's snapshot (its own shape) and
 * the reads of the assumptions themselves (`PAYMENT.period`).
 */
function code(file: string): string {
  return readFileSync(file, 'utf8')
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/\/\/.*$/gm, '')
    .replace(/\b(command|snapshot)\.\w+/g, '')
    .replace(/\b[A-Z][A-Z_]+(\.\w+)+/g, '');
}

describe('the guard assumptions and the probe', () => {
  describe('each guard assumption', () => {
    it('has a probe check of its own, and an assumption without one is refused', () => {
      for (const assumption of GUARD_ASSUMPTIONS)
        expect(checkOf(assumption.id)).toBe(GUARD_CHECKS[assumption.id]);
      expect(new Set(GUARD_ASSUMPTIONS.map((a) => a.id)).size).toBe(Object.keys(GUARD_CHECKS).length);
      const { payment_visible_on_enrollment: _left, ...without } = GUARD_CHECKS;
      expect(() => checkOf('payment_visible_on_enrollment', without)).toThrow(
        /payment_visible_on_enrollment has no probe check/,
      );
    });

    it('is described once: statement, what breaks, the probe step', () => {
      for (const a of GUARD_ASSUMPTIONS) {
        expect(a.statement.length).toBeGreaterThan(10);
        expect(a.breaksIfFalse.length).toBeGreaterThan(10);
        expect(a.probeStep).toMatch(/^(read|write): /);
      }
      // The file names each once: as a constant that GUARD_ASSUMPTIONS lists.
      const source = readFileSync('src/partner/assumptions.ts', 'utf8');
      for (const a of GUARD_ASSUMPTIONS) expect(source.split(`id: '${a.id}'`).length - 1).toBe(1);
    });
  });

  describe('the read-backs', () => {
    it.each(Object.entries(READ_BACKS))('%s reads the names of its assumptions from them', (file, names) => {
      const text = readFileSync(file, 'utf8');
      const body = code(file);
      for (const name of names) {
        expect(text).toMatch(
          new RegExp(`import \\{[^}]*\\b${name}\\b[^}]*\\} from '(\\.\\./)+partner/assumptions\\.js'`),
        );
        const assumption = (assumptions as unknown as Record<string, object>)[name]!;
        for (const field of namesOf(assumption)) {
          // Neither `record.rental_payments` nor 'rental_payments': the name comes from the assumption.
          expect(body, `${file} hard-codes '${field}' (${name})`).not.toMatch(
            new RegExp(`(\\.${field}\\b|['"\`]${field}['"\`])`),
          );
        }
      }
    });
  });

  describe('a read-only run against the sandbox', () => {
    let sandbox: Sandbox;
    beforeAll(async () => {
      sandbox = await startSandbox({ port: 0 });
      const control = createSandboxControl(sandbox.url);
      await control.addRecords('applications', [{ status: 'submitted' }]);
    });
    afterAll(async () => {
      await sandbox?.close();
    });

    it('reports a row for every guard assumption, in the order of GUARD_ASSUMPTIONS', async () => {
      const report = await runProbe({
        baseUrl: sandbox.url,
        accessKey: 'sandbox-access-key',
        secretKey: 'sandbox-secret-key',
        environment: 'sandbox',
        maxProcessingMs: 1000,
      });
      const covered = report.rows.flatMap((r) => (r.guard_assumption ? [r.guard_assumption] : []));
      expect([...new Set(covered)]).toEqual(GUARD_ASSUMPTIONS.map((a) => a.id));
      for (const row of report.rows.filter((r) => r.guard))
        expect(row.assumption).toBe(GUARD_ASSUMPTIONS.find((a) => a.id === row.guard_assumption)!.statement);
    });
  });
});
