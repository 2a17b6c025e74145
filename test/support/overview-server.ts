import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { Registry } from 'prom-client';
import { expect } from 'vitest';
import type { Db } from '../../src/db/prisma.js';
import { createInsightRouter } from '../../src/ops/insight-router.js';
import type { Overview, Stage } from '../../src/ops/overview/overview.js';

/** The console's overview API on a schema's rows (a registry of its own), over HTTP. */
export interface OverviewServer {
  overview(): Promise<Overview>;
  stage(id: Stage['id']): Promise<Stage>;
  close(): Promise<void>;
}

export async function serveOverview(db: Db): Promise<OverviewServer> {
  const app = express();
  app.use(createInsightRouter({ db, topicPrefix: '', registry: new Registry() }));
  const server = await new Promise<Server>((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const overview = async () => {
    const res = await fetch(`${base}/overview`);
    expect(res.status).toBe(200);
    return (await res.json()) as Overview;
  };
  return {
    overview,
    stage: async (id) => stageOf(await overview(), id),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

export const stageOf = (body: Overview, id: Stage['id']): Stage => body.stages.find((s) => s.id === id)!;
