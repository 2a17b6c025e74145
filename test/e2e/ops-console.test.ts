import { mkdir } from 'node:fs/promises';
import type { Page } from 'playwright-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { REDRIVE_HEADER } from '../../src/dead-letters/dead-letter-headers.js';
import { getDeadLetter } from '../../src/dead-letters/dead-letter-repository.js';
import { TOPICS } from '../../src/kafka/topics.js';
import {
  DECLINED_CARD,
  buildDecisionLetter,
  seedGuardRow,
  seedLetter,
} from '../dead-letters/build-dead-letter.js';
import { useApp } from '../support/app.js';
import type { TestDatabase } from '../support/db.js';
import type { TestKafka } from '../support/kafka.js';
import { skipWithoutChromium } from './browser.js';

const TOKEN = 'e2e-ops-token-0123456789';
const SCREENSHOT = 'test-artifacts/ops-console.png';

describe.skipIf(skipWithoutChromium)('ops console in a real browser', () => {
  const app = useApp({
    topics: [TOPICS.applicationDecisions],
    producer: true,
    ops: { opsToken: TOKEN, app: 'express' },
    browser: true,
  });
  let database: TestDatabase;
  let kafka: TestKafka;
  let page: Page;
  let base: string;
  const specs = {
    unverified: { reason: 'unverified', errorCode: 'api_error' },
    rejected: {
      reason: 'rejected',
      errorCode: 'invalid_state_transition',
      errorMessage: 'Application cannot be approved from state withdrawn',
    },
    declined: {
      reason: 'rejected',
      errorCode: 'processor_card_error',
      errorStatus: 402,
      errorMessage: 'Your card was declined.',
    },
    exhausted: { reason: 'exhausted', errorCode: 'lock_failed' },
  } as const;
  const letters = {} as Record<keyof typeof specs, ReturnType<typeof buildDecisionLetter>>;
  const ids: Record<keyof typeof specs, number> = { unverified: 0, rejected: 0, exhausted: 0, declined: 0 };
  // The Partner API's whole error, as the consumers keep it beside the letter (issue 21's shape).
  const partnerError = {
    ...DECLINED_CARD,
    errors: ['amount_cents: must be positive'],
    details: { tenant_email: 'unreachable' },
  };

  beforeAll(async () => {
    ({ database, kafka, base } = app);
    for (const name of Object.keys(specs) as (keyof typeof specs)[]) {
      letters[name] = buildDecisionLetter(kafka.prefix, specs[name]);
      if (name === 'declined') {
        (letters[name].headers as Record<string, string>)['dlq-error'] = JSON.stringify(partnerError);
      }
      ids[name] = await seedLetter(database.db, kafka.prefix, letters[name]);
    }
    await seedGuardRow(
      database.db,
      letters.unverified.decisionId,
      'unverified',
      letters.unverified.applicationId,
    );

    page = await app.browser.newPage({ viewport: { width: 1440, height: 1000 } });
  });

  const rows = () => page.locator('#letters-table tbody tr');

  describe('when an operator signs in, filters, inspects and redrives a letter', () => {
    it('republishes the letter with redrive headers and shows it redriven and audited', async () => {
      await page.goto(`${base}/ops`);
      await page.fill('#token', 'a-wrong-token-of-some-length');
      await page.click('#login-submit');
      await expect.poll(() => page.textContent('#login-error')).toContain('not valid');

      await page.fill('#token', TOKEN);
      await page.click('#login-submit');
      // The overview is the landing page; the letters are one tab away.
      await page.waitForSelector('#pipeline .stage');
      await page.click('#tab-letters');
      await page.waitForSelector('#letters-table tbody tr');
      await expect.poll(() => rows().count()).toBe(4);
      expect(await page.textContent('[data-testid=count-total]')).toBe('4 letters');
      // The Topic column shows the whole topic, not an ellipsis.
      const topicCell = rows().first().locator('td.topic');
      expect(await topicCell.evaluate((td) => td.scrollWidth <= td.clientWidth)).toBe(true);
      // Since/Until are empty until filled: their hints are placeholders, not values.
      expect(await page.inputValue('#f-since')).toBe('');
      expect(await page.getAttribute('#f-since', 'placeholder')).toContain('date or ISO time');

      await page.selectOption('#f-reason', 'rejected');
      await page.click('#apply-filters');
      await expect.poll(() => rows().count()).toBe(2);

      await page.click(`#letters-table tbody tr[data-id="${ids.declined}"]`);
      await expect.poll(() => page.textContent('#detail-title')).toBe(`Dead letter #${ids.declined}`);
      const shown = page.locator('[data-testid=partner-error]');
      expect(await shown.locator('[data-field=processor_code]').textContent()).toBe('card_declined');
      expect(await shown.locator('[data-field=processor_decline_code]').textContent()).toBe(
        'insufficient_funds',
      );
      expect(await shown.locator('[data-field=errors]').textContent()).toContain(
        'amount_cents: must be positive',
      );
      expect(await shown.locator('[data-field=details]').textContent()).toContain('tenant_email');
      await mkdir('test-artifacts', { recursive: true });
      await page.screenshot({ path: 'test-artifacts/ops-console-partner-error.png', fullPage: true });

      await page.click('#reset-filters');
      await page.fill('#f-search', 'WITHDRAWN');
      await page.click('#apply-filters');
      await expect.poll(() => rows().count()).toBe(1);
      await page.click('#reset-filters');
      await expect.poll(() => rows().count()).toBe(4);

      await page.click(`#letters-table tbody tr[data-id="${ids.unverified}"]`);
      await expect.poll(() => page.textContent('#detail-title')).toBe(`Dead letter #${ids.unverified}`);
      expect(await page.textContent('[data-testid=guard-state]')).toBe('unverified');
      expect(await page.textContent('#detail-value')).toContain(
        `"decision_id": "${letters.unverified.decisionId}"`,
      );
      expect(await page.textContent('#detail-headers')).toContain('dlq-partner-request-ids');

      await page.fill('#redrive-reason', 'partner outage over');
      // Redrive asks first; cancelling sends nothing.
      await page.click('#redrive');
      expect(await page.textContent('#redrive-confirm-text')).toContain(`dead letter #${ids.unverified}`);
      await page.click('#redrive-no');
      expect(await page.isVisible('#redrive-confirm')).toBe(false);
      expect((await getDeadLetter(database.db, ids.unverified))?.state).toBe('open');
      await page.click('#redrive');
      await page.click('#redrive-yes');
      await expect.poll(() => page.textContent('#action-result')).toContain('Redriven');
      await expect.poll(() => page.textContent('#detail-state')).toBe('redriven');
      await expect.poll(() => page.textContent('#detail-audit')).toContain('break-glass · redrive');

      await mkdir('test-artifacts', { recursive: true });
      await page.screenshot({ path: SCREENSHOT, fullPage: true });

      const [message] = await kafka.readMessages(TOPICS.applicationDecisions, 1);
      expect(message?.value?.toString()).toBe(letters.unverified.value);
      expect(message?.headers?.[REDRIVE_HEADER.redrivenFrom]?.toString()).toBe(String(ids.unverified));
      expect(message?.headers?.[REDRIVE_HEADER.redrivenBy]?.toString()).toBe('break-glass');
      expect((await getDeadLetter(database.db, ids.unverified))?.state).toBe('redriven');

      await page.click('#tab-audit');
      await page.waitForSelector('#audit-table tbody tr');
      const audit = await page.textContent('#audit-table tbody');
      expect(audit).toContain(`dead_letter:${ids.unverified}`);
      expect(audit).toContain('partner outage over');
      await page.screenshot({ path: 'test-artifacts/ops-console-audit.png', fullPage: true });
    });
  });

  describe('when its tables are shown', () => {
    it('heads each with its columns, once', async () => {
      const heads: Record<string, string[][]> = {};
      for (const id of await page.locator('main table[id]').evaluateAll((ts) => ts.map((t) => t.id))) {
        const rows = page.locator(`#${id} thead tr`);
        heads[id] = [];
        for (let i = 0; i < (await rows.count()); i++)
          heads[id].push(await rows.nth(i).locator('th').allTextContents());
      }
      expect(heads).toEqual({
        'trace-table': [['When (UTC)', 'Stage', 'What', 'Ids and facts']],
        'letters-table': [
          ['ID', 'State', 'Reason', 'Code', 'Topic', 'Key', 'Source', 'Command', 'Last failure'],
        ],
        'detail-headers': [],
        'audit-table': [['When', 'Who', 'Action', 'Target', 'Reason', 'Details']],
        'reconcile-runs': [['Run', 'Started', 'By', 'Window', 'Scope', 'Items', 'Partner requests']],
        'reconcile-items': [['Verdict', 'Type', 'Source', 'Command (trace)', 'Target', 'Why']],
        'tokens-table': [['Name', 'Role', 'Created by', 'Created', 'Expires', 'Last used', '']],
      });
    });
  });
});
