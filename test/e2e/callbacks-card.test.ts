import { mkdir } from 'node:fs/promises';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCallbackDeliverer, type CallbackDeliverer } from '../../src/callbacks/callback-deliverer.js';
import { insertDeliveries, type NewDelivery } from '../../src/callbacks/callback-repository.js';
import { toCloudEvent } from '../../src/contracts/cloudevent.js';
import { OUTCOME_TYPES } from '../../src/contracts/outcomes.js';
import { createLogger } from '../../src/logger.js';
import { startReceiver, until } from '../callbacks/callback-receiver.js';
import { buildSecret } from '../receiver/webhooks.js';
import { useApp } from '../support/app.js';
import type { TestDatabase } from '../support/db.js';
import { skipWithoutChromium } from './browser.js';

const TOKEN = 'e2e-ops-token-0123456789';

function outcome(source: string, commandId: string): NewDelivery {
  const id = `outcome.${commandId}`;
  const data = {
    command_id: commandId,
    command_source: source,
    command_type: 'rental_payment' as const,
    target_id: 'enr-7',
    status: 'rejected' as const,
    attempts: 1,
    partner_request_ids: [`${commandId}.a1`],
  };
  const event = toCloudEvent({ id, source: 'test', type: OUTCOME_TYPES.rental_payment, data });
  return {
    source,
    webhookId: `${id}.rejected`,
    eventId: id,
    eventType: OUTCOME_TYPES.rental_payment,
    commandType: 'rental_payment',
    commandId,
    outcomeStatus: 'rejected',
    payload: JSON.stringify(event),
  };
}

/**
 * The console's Outcome callbacks card against real deliveries: acme's endpoint answers 500 until
 * its delivery is dead (a retry span of 1 ms), beta's answers 410 (disabled). The card shows both
 * endpoints and the dead one; Redeliver in the browser sends it again, with the same webhook-id,
 * to an endpoint that now answers 200.
 */
describe.skipIf(skipWithoutChromium)('the console callbacks card in a real browser', () => {
  const app = useApp({ ops: { opsToken: TOKEN, topicPrefix: 'e2e.', app: 'express' }, browser: true });
  let database: TestDatabase;
  let page: Page;
  let base: string;
  let deliverer: CallbackDeliverer;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let acmeUp = false;
  const secrets = { acme: [buildSecret()], beta: [buildSecret()] };
  const acme = outcome('acme', 'pms:7f3/payment #7 für Wohnung');
  const beta = outcome('beta', 'pay-beta-1');

  beforeAll(async () => {
    ({ database, base } = app);
    receiver = await startReceiver(
      { acme: () => ({ status: acmeUp ? 200 : 500 }), beta: () => ({ status: 410 }) },
      secrets,
    );
    deliverer = createCallbackDeliverer({
      db: database.db,
      logger: createLogger({ level: 'silent' }),
      endpoints: {
        acme: { url: receiver.url('acme'), secrets: secrets.acme },
        beta: { url: receiver.url('beta'), secrets: secrets.beta },
      },
      timeoutMs: 2000,
      // The first failure is past the span: dead at once.
      schedule: { initialMs: 1000, maxDelayMs: 1000, spanMs: 1 },
      breaker: { failureThreshold: 5, cooldownMs: 60_000, maxCooldownMs: 60_000 },
      concurrency: 2,
      pollMs: 100,
    });
    await deliverer.start();
    await insertDeliveries(database.db, [acme, beta]);
    deliverer.wake(['acme', 'beta']);

    page = await app.browser.newPage({ viewport: { width: 1440, height: 1200 } });
  });

  afterAll(async () => {
    await deliverer?.stop();
    await receiver?.close();
  });

  const opsApi = async () => {
    const res = await fetch(`${base}/ops/api/callbacks`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.status).toBe(200);
    return (await res.json()) as {
      sources: Array<{ source: string; endpoint: string; dead: number; delivered: number; pending: number }>;
      dead: Array<{ id: string; webhookId: string; source: string }>;
    };
  };

  it('shows the endpoints and the dead callback, and Redeliver sends it again', async () => {
    // Both deliveries have had their attempt: acme's is dead, beta's endpoint is disabled.
    const before = await until('a dead acme callback and beta disabled', async () => {
      const state = await opsApi();
      const b = state.sources.find((s) => s.source === 'beta');
      return state.dead.length === 1 && b?.endpoint === 'disabled' ? state : undefined;
    });
    const deadId = before.dead[0]!.id;
    // Once disabled (as PostgreSQL says), beta's endpoint gets nothing more.
    const betaAttempts = receiver.received.filter((r) => r.source === 'beta').length;
    expect(before.dead[0]!.webhookId).toBe(acme.webhookId);
    expect(receiver.received.filter((r) => r.source === 'acme')).toHaveLength(1);

    await page.goto(`${base}/ops`);
    await page.fill('#token', TOKEN);
    await page.click('#login-submit');
    const card = page.locator('[data-testid=callbacks]');
    await card.locator('tr[data-source=beta]').waitFor();
    expect(await card.locator('tr[data-source=beta] td').nth(1).textContent()).toBe('disabled (410 Gone)');
    expect(await card.locator('tr[data-source=acme] td').nth(1).textContent()).toBe('healthy');
    expect(await card.locator('tr[data-source=acme] td').nth(4).textContent()).toBe('1');
    const deadRow = card.locator(`tr[data-delivery="${deadId}"]`);
    // The PMS's own id, shown as it is (escaped as JSON text, never as markup).
    expect(await deadRow.textContent()).toContain(JSON.stringify(acme.commandId));
    expect(await deadRow.textContent()).toContain('HTTP 500');
    await mkdir('test-artifacts', { recursive: true });
    await page.screenshot({ path: 'test-artifacts/ops-console-callbacks.png', fullPage: true });

    acmeUp = true;
    await deadRow.locator('button', { hasText: 'Redeliver' }).click();
    await expect.poll(() => page.textContent('#callbacks-result')).toContain('redelivering 1 callback');

    // Attempted again: the endpoint gets it a second time, same webhook-id, verified by svix.
    const again = await until('the redelivered callback at the endpoint', () => {
      const got = receiver.received.filter((r) => r.source === 'acme');
      return got.length >= 2 ? got : undefined;
    });
    expect(again[1]!.headers['webhook-id']).toBe(acme.webhookId);
    expect(again[1]!.verifiedWith).toEqual([0]);
    const after = await until('acme delivered per the ops API', async () => {
      const state = await opsApi();
      const a = state.sources.find((s) => s.source === 'acme');
      return a?.delivered === 1 ? a : undefined;
    });
    expect(after.dead).toBe(0);
    expect(receiver.received.filter((r) => r.source === 'beta')).toHaveLength(betaAttempts);
  });
});
