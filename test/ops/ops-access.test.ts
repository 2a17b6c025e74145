import type { Server } from 'node:http';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type Db } from '../../src/db/prisma.js';
import { requestId } from '../../src/http/request-id.js';
import { createLogger } from '../../src/logger.js';
import { createOpsRouter, type OpsRouter } from '../../src/ops/ops-router.js';
import { OPS_API_ROUTES } from '../../src/ops/ops-roles.js';
import { runCli } from '../support/cli.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';

const BREAK_GLASS = 'break-glass-token-0123456789';

/** #44: personal tokens, roles per route, break-glass; two processes on one database. */
describe('ops access', () => {
  let database: TestDatabase;
  let secondDb: Db;
  const servers: Server[] = [];
  const routers: OpsRouter[] = [];
  let first: string;
  let second: string;
  /** A process without OPS_TOKEN (personal tokens and sessions only). */
  let noBreakGlass: string;

  async function start(db: Db, opsToken: string | undefined = BREAK_GLASS): Promise<string> {
    const router = createOpsRouter({
      db,
      logger: createLogger({ level: 'silent' }),
      opsToken,
      topicPrefix: 'unused.',
    });
    routers.push(router);
    const app = express();
    app.use(requestId());
    app.use('/ops', router);
    const server = await new Promise<Server>((resolve) => {
      const s = app.listen(0, '127.0.0.1', () => resolve(s));
    });
    servers.push(server);
    return `http://127.0.0.1:${(server.address() as { port: number }).port}/ops/api`;
  }

  const call = (base: string, token: string, path: string, init: RequestInit = {}) =>
    fetch(`${base}${path}`, {
      ...init,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...init.headers },
    });

  beforeAll(async () => {
    database = await createTestDatabase();
    // The second "process": its own connection pool, its own router, no shared memory.
    secondDb = createDb(database.url, { max: 2 });
    first = await start(database.db);
    second = await start(secondDb);
    noBreakGlass = await start(database.db, undefined);
  });
  afterAll(async () => {
    await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
    await Promise.all(routers.map((r) => r.close()));
    await secondDb.$disconnect();
    await database.drop();
  });

  it('refuses a revoked token on a second process at once', async () => {
    const created = await call(first, BREAK_GLASS, '/tokens', {
      method: 'POST',
      body: JSON.stringify({ name: 'script-1', role: 'viewer', expires_days: 30 }),
    });
    expect(created.status).toBe(201);
    const { token, role } = (await created.json()) as { token: string; role: string };
    expect(role).toBe('viewer');
    expect((await call(second, token, '/session')).status).toBe(200);

    const revoked = await call(first, BREAK_GLASS, '/tokens/script-1', { method: 'DELETE' });
    expect(revoked.status).toBe(200);
    const refused = await call(second, token, '/dead-letters');
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toMatch(/error="invalid_token"/);
    expect(((await refused.json()) as { error: { message: string } }).error.message).toMatch(/revoked/);

    const listed = (await (await call(second, BREAK_GLASS, '/tokens?revoked=true')).json()) as {
      items: Record<string, unknown>[];
    };
    expect(listed.items).toEqual([expect.objectContaining({ name: 'script-1', role: 'viewer' })]);
    expect(JSON.stringify(listed)).not.toContain(token);
  });

  it('answers 401 unauthenticated for an unknown, revoked or expired token, with or without OPS_TOKEN', async () => {
    const created = (await (
      await call(first, BREAK_GLASS, '/tokens', {
        method: 'POST',
        body: JSON.stringify({ name: 'soon-gone', role: 'viewer', expires_days: 1 }),
      })
    ).json()) as { token: string };
    await database.sql.query(
      `UPDATE ops_tokens SET expires_at = now() - interval '1 second' WHERE name = 'soon-gone'`,
    );
    const revoked = (await (
      await call(first, BREAK_GLASS, '/tokens', {
        method: 'POST',
        body: JSON.stringify({ name: 'revoked-one', role: 'viewer' }),
      })
    ).json()) as { token: string };
    await call(first, BREAK_GLASS, '/tokens/revoked-one', { method: 'DELETE' });
    for (const base of [first, noBreakGlass]) {
      for (const token of ['rbo_not-a-token-anyone-made', created.token, revoked.token]) {
        const res = await call(base, token, '/session');
        expect(res.status, `${base === first ? 'with' : 'without'} OPS_TOKEN`).toBe(401);
        expect(((await res.json()) as { error: { code: string } }).error.code).toBe('unauthenticated');
      }
    }
  });

  it('gives a personal token 90 days unless never is asked for', async () => {
    const made = async (body: Record<string, unknown>) =>
      (await (
        await call(first, BREAK_GLASS, '/tokens', { method: 'POST', body: JSON.stringify(body) })
      ).json()) as { expires_at: string | null };
    const plain = await made({ name: 'ninety', role: 'viewer' });
    const days = (Date.parse(plain.expires_at!) - Date.now()) / 86_400_000;
    expect(days).toBeGreaterThan(89.9);
    expect(days).toBeLessThanOrEqual(90);
    expect((await made({ name: 'forever', role: 'viewer', expires_days: 'never' })).expires_at).toBeNull();
  });

  it('answers 403 forbidden naming the role, audits it, and ignores X-Ops-Actor', async () => {
    const { token } = (await (
      await call(first, BREAK_GLASS, '/tokens', {
        method: 'POST',
        body: JSON.stringify({ name: 'op', role: 'operator' }),
      })
    ).json()) as { token: string };
    const res = await call(first, token, '/tokens', {
      method: 'POST',
      body: JSON.stringify({ name: 'sneaky', role: 'admin' }),
      headers: { 'x-ops-actor': 'the-admin' },
    });
    expect(res.status).toBe(403);
    expect(((await res.json()) as { error: unknown }).error).toMatchObject({
      code: 'forbidden',
      role_needed: 'admin',
      message: 'this needs the admin role; op has operator',
    });
    const { rows } = await database.sql.query(
      `SELECT actor, action, target, details FROM audit_log WHERE action = 'forbidden'`,
    );
    expect(rows).toEqual([
      {
        actor: 'token:op',
        action: 'forbidden',
        target: 'ops_api:POST /tokens',
        details: { role: 'operator', role_needed: 'admin', path: '/tokens' },
      },
    ]);
    // Break-glass: its every write audited as such.
    const uses = await database.sql.query(`SELECT actor FROM audit_log WHERE action = 'break_glass'`);
    expect(uses.rows.length).toBeGreaterThanOrEqual(2);
    expect(new Set(uses.rows.map((r: { actor: string }) => r.actor))).toEqual(new Set(['break-glass']));
  });

  it('gives every route of the ops API a role, and names no route that does not exist', () => {
    type Layer = { route?: { path: string; methods: Record<string, boolean> }; handle?: { stack?: Layer[] } };
    const served = new Set<string>();
    const walk = (stack: Layer[]) => {
      for (const layer of stack) {
        if (layer.route) {
          for (const method of Object.keys(layer.route.methods))
            served.add(`${method.toUpperCase()} ${layer.route.path}`);
        } else if (layer.handle?.stack) walk(layer.handle.stack);
      }
    };
    walk((routers[0] as unknown as { stack: Layer[] }).stack);
    // Outside /ops/api: the console's redirect, its icon and sign-in (no role: they are how one gets one).
    const outside = new Set(['GET /', 'GET /favicon.ico', 'GET /methods']);
    const table = new Set(OPS_API_ROUTES.map((r) => `${r.method} ${r.path}`));
    const api = [...served].filter((r) => !outside.has(r));
    expect(api.filter((r) => !table.has(r))).toEqual([]);
    expect([...table].filter((r) => !served.has(r))).toEqual([]);
  });

  it('rentbridge ops-token create prints the token alone on the last line; list never shows it', async () => {
    const env = { DATABASE_URL: database.url, LOG_LEVEL: 'silent' };
    const created = await runCli(
      ['ops-token', 'create', '--name', 'ci-bot', '--role', 'operator', '--expires', '7d'],
      env,
    );
    expect(created.code).toBe(0);
    const lines = created.stdout.trimEnd().split('\n');
    const token = lines[lines.length - 1]!;
    expect(token).toMatch(/^rbo_[A-Za-z0-9_-]{43}$/);
    expect((await call(second, token, '/session')).status).toBe(200);
    const { rows } = await database.sql.query(`SELECT token_hash FROM ops_tokens WHERE name = 'ci-bot'`);
    expect(rows[0].token_hash).not.toContain(token);
    const { rows: audit } = await database.sql.query(
      `SELECT actor FROM audit_log WHERE action = 'token_create' AND target = 'ops_token:ci-bot'`,
    );
    expect(audit[0].actor).toMatch(/^cli:[^@\s]+@\S+$/);

    const forever = await runCli(
      ['ops-token', 'create', '--name', 'kiosk', '--role', 'viewer', '--expires', 'never'],
      env,
    );
    expect(forever.stdout).toMatch(/token "kiosk" \(viewer\), expires never/);
    const { rows: kiosk } = await database.sql.query(
      `SELECT expires_at FROM ops_tokens WHERE name = 'kiosk'`,
    );
    expect(kiosk[0].expires_at).toBeNull();

    const listed = await runCli(['ops-token', 'list'], env);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(/ci-bot\s+operator/);
    expect(listed.stdout).not.toContain(token);
  }, 120_000);
});
