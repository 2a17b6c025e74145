import { readFile } from 'node:fs/promises';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule, { type FormatsPlugin } from 'ajv-formats';
import { Webhook } from 'standardwebhooks';
import { parse as parseYaml } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { toOutcome } from '../../src/command-consumer/outcome-events.js';
import { commandOutcomeSchema } from '../../src/contracts/outcomes.js';
import type { CommandIdentity } from '../../src/contracts/command-contracts.js';
import { createCommandRepository } from '../../src/guard/store/command-repository.js';
import { createHttpApp } from '../../src/http/http-app.js';
import { createLogger } from '../../src/logger.js';
import { createCommandStatusRouter } from '../../src/pms/command-status-router.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { buildSecret } from '../receiver/webhooks.js';

const logger = createLogger({ level: 'silent' });
// ajv-formats is CommonJS with a default export.
const addFormats: FormatsPlugin =
  (addFormatsModule as unknown as { default?: FormatsPlugin }).default ??
  (addFormatsModule as unknown as FormatsPlugin);
const OPENAPI_ID = 'https://rentbridge.local/openapi.yaml';

/** A response schema of docs/openapi.yaml, as an outside client would check it (ajv, JSON Schema 2020-12). */
async function openApiSchema(name: string) {
  const doc = parseYaml(
    await readFile(new URL('../../docs/openapi.yaml', import.meta.url), 'utf8'),
  ) as Record<string, unknown>;
  const ajv = new Ajv2020({ allErrors: true, strict: false });
  addFormats(ajv);
  ajv.addSchema({ ...doc, $id: OPENAPI_ID });
  return ajv.getSchema(`${OPENAPI_ID}#/components/schemas/${name}`)!;
}
const secrets = { acme: [buildSecret()], globex: [buildSecret()] };

/**
 * A GET as a PMS sends it: Standard Webhooks headers made by the `standardwebhooks` library (an
 * outside client) over `GET <path and query as sent>`.
 */
async function get(base: string, pathAndQuery: string, secret: string, id = `msg_${Math.random()}`) {
  const url = new URL(pathAndQuery, base);
  const sent = `${url.pathname}${url.search}`;
  const timestamp = new Date();
  const signature = new Webhook(secret).sign(id, timestamp, `GET ${sent}`);
  const res = await fetch(url, {
    headers: {
      'webhook-id': id,
      'webhook-timestamp': String(Math.floor(timestamp.getTime() / 1000)),
      'webhook-signature': signature,
    },
  });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
}

describe('command status for PMS sources', () => {
  let database: TestDatabase;
  let server: Server;
  let base: string;
  const snapshot = { found: true, status: 'pending', updated_at: null, taken_at: new Date().toISOString() };
  // A PMS id as PMSs write them: ':', '/', '#', spaces and non-ASCII letters.
  const oddId = 'pms:7f3/decision #7 für Wohnung';

  beforeAll(async () => {
    database = await createTestDatabase();
    const app = createHttpApp({
      logger,
      mounts: [
        {
          path: '/pms',
          router: createCommandStatusRouter({ db: database.db, secrets, toleranceSeconds: 300, logger }),
        },
      ],
    });
    server = await new Promise<Server>((resolve) => {
      const s = app.listen(0, '127.0.0.1', () => resolve(s));
    });
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

    const repo = createCommandRepository(database.db);
    const make = async (id: CommandIdentity, targetId: string) =>
      repo.ensure({ ...id, targetId, payload: { id: id.commandId } });
    // acme: a rejected payment 42 and an applied decision 42 (two types, one id), one pending, one in flight.
    const payment: CommandIdentity = { source: 'acme', commandType: 'rental_payment', commandId: '42' };
    await make(payment, 'app-1');
    await repo.beginWrite(payment, { attempt: 1, requestId: '42.a1', snapshot });
    await repo.finish(payment, 'rejected', {
      code: 'card_declined',
      status: 402,
      message: 'Your card was declined.',
      partner_error: {
        code: 'card_declined',
        status: 402,
        message: 'Your card was declined.',
        request_id: '42.a1',
        processor_code: 'card_declined',
        processor_decline_code: 'insufficient_funds',
      },
    });
    const decision: CommandIdentity = {
      source: 'acme',
      commandType: 'application_decision',
      commandId: '42',
    };
    await make(decision, 'app-1');
    await repo.beginWrite(decision, { attempt: 1, requestId: '42.a1x', snapshot });
    await repo.finish(decision, 'applied');
    await make({ source: 'acme', commandType: 'application_decision', commandId: oddId }, 'app-2');
    const inFlight: CommandIdentity = { source: 'acme', commandType: 'rental_payment', commandId: 'p-9' };
    await make(inFlight, 'app-3');
    await repo.beginWrite(inFlight, { attempt: 1, requestId: 'p-9.a1', snapshot });
    // A registration finished with the outcome its consumer published kept whole (Partner ids).
    const registration: CommandIdentity = {
      source: 'acme',
      commandType: 'customer_registration',
      commandId: 'reg-1',
    };
    await make(registration, 'ada@example.com');
    await repo.beginWrite(registration, { attempt: 1, requestId: 'reg-1.a1', snapshot });
    const finished = await repo.finish(registration, 'applied');
    await repo.recordOutcome(
      registration,
      {
        ...toOutcome('customer_registration', finished),
        pms_reference: 'tenant/7 Müller',
        partner_customer_id: '9001',
      },
      'outcome.reg-1.applied',
    );
    // globex: its own 42, never visible to acme (nor acme's to globex).
    await make({ source: 'globex', commandType: 'rental_payment', commandId: '42' }, 'app-9');
    await make({ source: 'globex', commandType: 'rental_payment', commandId: 'g-only' }, 'app-9');
  });
  afterAll(async () => {
    server?.closeAllConnections();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    await database?.drop();
  });

  it('answers the outcome as published on Kafka, with the Partner API error whole', async () => {
    const res = await get(base, '/pms/acme/commands/42?type=rental_payment', secrets.acme[0]!);
    expect(res.status).toBe(200);
    const [one] = res.json.data as Array<Record<string, unknown>>;
    const repo = createCommandRepository(database.db);
    const row = await repo.find({ source: 'acme', commandType: 'rental_payment', commandId: '42' });
    const published = toOutcome('rental_payment', row!);
    // Every field of the outcome on Kafka, as it is; the times beside them.
    expect(one).toMatchObject(published as unknown as Record<string, unknown>);
    const { received_at, updated_at, finished_at, ...outcome } = one!;
    expect(commandOutcomeSchema.parse(outcome)).toEqual(published);
    expect([received_at, updated_at, finished_at].every((t) => typeof t === 'string')).toBe(true);
    expect(one!.error).toMatchObject({ code: 'card_declined', processor_decline_code: 'insufficient_funds' });
  });

  it('answers the published outcome whole, Partner ids included', async () => {
    const res = await get(base, '/pms/acme/commands/reg-1', secrets.acme[0]!);
    expect(res.json.data).toEqual([
      expect.objectContaining({
        status: 'applied',
        pms_reference: 'tenant/7 Müller',
        partner_customer_id: '9001',
        partner_request_ids: ['reg-1.a1'],
      }),
    ]);
  });

  it('answers every command type sharing an id, or the one ?type= names', async () => {
    const all = await get(base, '/pms/acme/commands/42', secrets.acme[0]!);
    expect(all.status).toBe(200);
    const types = (all.json.data as Array<{ command_type: string; status: string }>).map((d) => [
      d.command_type,
      d.status,
    ]);
    expect(types).toEqual([
      ['application_decision', 'applied'],
      ['rental_payment', 'rejected'],
    ]);
  });

  it('answers pending and in_flight with what they wait for; an id of any text', async () => {
    const odd = await get(base, `/pms/acme/commands/${encodeURIComponent(oddId)}`, secrets.acme[0]!);
    expect(odd.status).toBe(200);
    expect(odd.json.data).toEqual([
      expect.objectContaining({ command_id: oddId, status: 'pending', waiting_for: expect.any(String) }),
    ]);
    const flying = await get(base, '/pms/acme/commands/p-9', secrets.acme[0]!);
    expect(flying.json.data).toEqual([
      expect.objectContaining({ status: 'in_flight', attempts: 1, partner_request_ids: ['p-9.a1'] }),
    ]);
    expect(String((flying.json.data as Array<{ waiting_for: string }>)[0]!.waiting_for)).toMatch(/write 1/);
  });

  it('a source sees only its own commands', async () => {
    const globex42 = await get(base, '/pms/globex/commands/42', secrets.globex[0]!);
    expect((globex42.json.data as Array<{ command_source: string }>).map((d) => d.command_source)).toEqual([
      'globex',
    ]);
    expect((await get(base, '/pms/acme/commands/g-only', secrets.acme[0]!)).status).toBe(404);
    // acme's secret does not open globex's path, nor does an unknown source answer anything.
    const crossed = await get(base, '/pms/globex/commands/g-only', secrets.acme[0]!);
    expect(crossed.status).toBe(401);
    expect(crossed.json).toMatchObject({ error: { code: 'unauthenticated' } });
    expect((await get(base, '/pms/nobody/commands/42', secrets.acme[0]!)).status).toBe(401);
    const list = await get(base, '/pms/globex/commands', secrets.globex[0]!);
    expect((list.json.data as Array<{ command_id: string }>).map((d) => d.command_id).sort()).toEqual([
      '42',
      'g-only',
    ]);
  });

  it('the signature covers the path and query: a signed request answers nothing else', async () => {
    const url = new URL('/pms/acme/commands/42', base);
    const timestamp = new Date();
    const signature = new Webhook(secrets.acme[0]!).sign('msg_1', timestamp, 'GET /pms/acme/commands/p-9');
    const res = await fetch(url, {
      headers: {
        'webhook-id': 'msg_1',
        'webhook-timestamp': String(Math.floor(timestamp.getTime() / 1000)),
        'webhook-signature': signature,
      },
    });
    expect(res.status).toBe(401);
    expect((await fetch(url)).status).toBe(401);
  });

  it('lists by status and since, a page at a time, every row once', async () => {
    const rejected = await get(base, '/pms/acme/commands?status=rejected,applied', secrets.acme[0]!);
    expect((rejected.json.data as Array<{ status: string }>).map((d) => d.status).sort()).toEqual([
      'applied',
      'applied',
      'rejected',
    ]);
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const q: string = `/pms/acme/commands?limit=1${cursor ? `&cursor=${cursor}` : ''}`;
      const page = await get(base, q, secrets.acme[0]!);
      expect(page.status).toBe(200);
      for (const d of page.json.data as Array<{ command_type: string; command_id: string }>) {
        seen.push(`${d.command_type}/${d.command_id}`);
      }
      cursor = page.json.next_cursor as string | null;
      expect(page.json.has_more).toBe(cursor !== null);
      pages++;
    } while (cursor && pages < 10);
    expect(seen.sort()).toEqual(
      [
        'application_decision/42',
        `application_decision/${oddId}`,
        'rental_payment/42',
        'rental_payment/p-9',
        'customer_registration/reg-1',
      ].sort(),
    );
    const future = new Date(Date.now() + 60_000).toISOString();
    const none = await get(base, `/pms/acme/commands?since=${encodeURIComponent(future)}`, secrets.acme[0]!);
    expect(none.json).toEqual({ data: [], has_more: false, next_cursor: null });
    const bad = await get(base, '/pms/acme/commands?status=lost', secrets.acme[0]!);
    expect(bad.status).toBe(422);
    expect(bad.json).toMatchObject({ error: { code: 'validation_error' } });
  });

  it('answers what docs/openapi.yaml describes', async () => {
    const one = await openApiSchema('CommandStatusList');
    const page = await openApiSchema('CommandPage');
    const error = await openApiSchema('Error');
    for (const path of [
      '/pms/acme/commands/42',
      '/pms/acme/commands/p-9',
      `/pms/acme/commands/${encodeURIComponent(oddId)}`,
    ]) {
      const res = await get(base, path, secrets.acme[0]!);
      expect(one(res.json), `${path}: ${JSON.stringify(one.errors)}`).toBe(true);
    }
    const list = await get(base, '/pms/acme/commands?limit=2', secrets.acme[0]!);
    expect(page(list.json), JSON.stringify(page.errors)).toBe(true);
    const missing = await get(base, '/pms/acme/commands/nope', secrets.acme[0]!);
    expect(missing.status).toBe(404);
    expect(error(missing.json), JSON.stringify(error.errors)).toBe(true);
    const doc = await readFile(new URL('../../docs/openapi.yaml', import.meta.url), 'utf8');
    for (const path of [
      '/webhooks/pms/{source}',
      '/pms/{source}/customer-access-tokens',
      '/pms/{source}/commands/{command_id}',
      '/pms/{source}/commands',
    ]) {
      expect((parseYaml(doc) as { paths: Record<string, unknown> }).paths).toHaveProperty([path]);
    }
  });
});
