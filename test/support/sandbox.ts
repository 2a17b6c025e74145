import { afterAll, beforeAll } from 'vitest';
import { createLogger } from '../../src/logger.js';
import { createPartnerClient, type PartnerClient } from '../../src/partner/index.js';
import type { SandboxControl } from '../../src/dev/sandbox/control-client.js';
import { createSandboxControl, startSandbox, type Sandbox } from '../../src/dev/sandbox/index.js';

/**
 * A sandbox on a free port, its control API, and a Partner API client of it with the sandbox's keys.
 * `onRequest` sees every request the client sends (to count the Partner requests a test makes).
 */
export async function startSandboxPartner(
  options: { onRequest?: (url: URL, method: string) => void } = {},
): Promise<{
  sandbox: Sandbox;
  control: SandboxControl;
  partner: PartnerClient;
}> {
  const sandbox = await startSandbox({ port: 0 });
  return {
    sandbox,
    control: createSandboxControl(sandbox.url),
    partner: createPartnerClient({
      baseUrl: sandbox.url,
      accessKey: 'sandbox-access-key',
      secretKey: 'sandbox-secret-key',
      logger: createLogger({ level: 'silent' }),
      ...(options.onRequest && {
        fetch: async (input: string | URL | Request, init?: RequestInit) => {
          const url = new URL(String(input instanceof Request ? input.url : input));
          options.onRequest!(url, init?.method ?? (input instanceof Request ? input.method : 'GET'));
          return fetch(input, init);
        },
      }),
    }),
  };
}

/**
 * `startSandboxPartner` as hooks of the calling `describe`: started before its tests, closed after;
 * read the fields inside tests and hooks.
 */
export function useSandboxPartner(): { readonly control: SandboxControl; readonly partner: PartnerClient } {
  let started: Awaited<ReturnType<typeof startSandboxPartner>> | undefined;
  beforeAll(async () => {
    started = await startSandboxPartner();
  });
  afterAll(async () => {
    await started?.sandbox.close();
  });
  return {
    get control() {
      return started!.control;
    },
    get partner() {
      return started!.partner;
    },
  };
}
