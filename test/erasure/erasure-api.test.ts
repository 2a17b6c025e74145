import type { Server } from 'node:http';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestId } from '../../src/http/request-id.js';
import { createLogger } from '../../src/logger.js';
import { createOpsRouter, type OpsRouter } from '../../src/ops/ops-router.js';
import { emailDigest } from '../../src/privacy/erased-records.js';
import { runCli } from '../support/cli.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';

const BREAK_GLASS = 'break-glass-token-erasure-0123';
const EMAIL = 'Nobody.Here@erase-api.example';

/** `POST /ops/api/erasures` is an admin's; `rentbridge erase` refuses bad usage and prints its receipt. */
describe('erasure over the ops API and the CLI', () => {
  let database: TestDatabase;
  let router: OpsRouter;
  let server: Server;
  let base = '';

  const call = (token: string, path: string, body?: unknown) =>
    fetch(`${base}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body ?? {}),
    });

  beforeAll(async () => {
    database = await createTestDatabase();
    router = createOpsRouter({
      db: database.db,
      logger: createLogger({ level: 'silent' }),
      opsToken: BREAK_GLASS,
      topicPrefix: 'unused.',
    });
    const app = express();
    app.use(requestId());
    app.use('/ops', router);
    server = await new Promise<Server>((resolve) => {
      const s = app.listen(0, '127.0.0.1', () => resolve(s));
    });
    base = `http://127.0.0.1:${(server.address() as { port: number }).port}/ops/api`;
  });
  afterAll(async () => {
    await new Promise((r) => server.close(r));
    await router.close();
    await database.drop();
  });

  it('answers 403 to a viewer and an operator, and the receipt to an admin', async () => {
    for (const role of ['viewer', 'operator']) {
      const created = await call(BREAK_GLASS, '/tokens', { name: `erase-${role}`, role });
      const { token } = (await created.json()) as { token: string };
      const refused = await call(token, '/erasures', { email: EMAIL, dry_run: true });
      expect(refused.status, role).toBe(403);
    }
    expect((await call(BREAK_GLASS, '/erasures', { email: 'not an address' })).status).toBe(400);
    expect((await call(BREAK_GLASS, '/erasures', { email: EMAIL, extra: 1 })).status).toBe(400);
    const done = await call(BREAK_GLASS, '/erasures', { email: EMAIL, dry_run: true, note: 'ticket 7' });
    expect(done.status).toBe(200);
    expect(await done.json()).toMatchObject({
      dry_run: true,
      email_digest: emailDigest(EMAIL),
      customers: 0,
    });
    const { rows } = await database.sql.query(`SELECT actor, details FROM audit_log WHERE action = 'erase'`);
    expect(rows).toEqual([
      expect.objectContaining({ details: expect.objectContaining({ dry_run: true, note: 'ticket 7' }) }),
    ]);
    expect(JSON.stringify(rows)).not.toContain(EMAIL.toLowerCase());
  });

  it('rentbridge erase exits 2 on bad usage and 0 with its receipt, as a table or JSON', async () => {
    const env = { DATABASE_URL: database.url, LOG_LEVEL: 'silent' };
    const missing = await runCli(['erase'], env);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/--email/);
    const table = await runCli(['erase', '--email', EMAIL, '--dry-run'], env);
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/Dry run: nothing changed/);
    const json = await runCli(['erase', '--email', EMAIL, '--format', 'json', '--note', 'ticket 8'], env);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({ dry_run: false, email_digest: emailDigest(EMAIL) });
    const { rows } = await database.sql.query(`SELECT count(*)::int AS n FROM erased_people`);
    expect(rows[0].n).toBe(1);
  }, 120_000);
});
