import { existsSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Express } from 'express';
import { chromium, type Browser } from 'playwright-core';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const available = existsSync(CHROMIUM);
const inCi = process.env.CI === 'true' || process.env.CI === '1';

/** Locally, a machine without Chromium skips the browser tests; in CI its absence is a failure. */
export const skipWithoutChromium = !available && !inCi;

/** Debian's Chromium, headless, with nothing that reaches the network on its own. */
export async function launchChromium(): Promise<Browser> {
  if (!available) {
    throw new Error(
      `Chromium not found at ${CHROMIUM}: install Debian's chromium package (apt-get install chromium)`,
    );
  }
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/** Serves `app` on a free local port; `base` is its address. */
export async function serveApp(app: Express): Promise<{ server: Server; base: string }> {
  const server = await new Promise<Server>((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  return { server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

export async function closeServer(server: Server | undefined): Promise<void> {
  await new Promise((r) => (server ? server.close(r) : r(undefined)));
}
