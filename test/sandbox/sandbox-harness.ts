import { afterAll, beforeAll, beforeEach } from 'vitest';
import {
  createSandboxControl,
  DEFAULT_ACCESS_KEY,
  DEFAULT_SECRET_KEY,
  startSandbox,
  type Sandbox,
} from '../../src/dev/sandbox/index.js';
import type { SandboxControl } from '../../src/dev/sandbox/control-client.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read JSON bodies loosely
export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
}

export interface Harness {
  sandbox: Sandbox;
  control: SandboxControl;
  /** A fresh API token for a key pair (default: the sandbox's default keys). */
  token(accessKey?: string, secretKey?: string): Promise<string>;
  /** One request to the sandbox; `token: null` sends no Authorization header. */
  api(
    method: string,
    path: string,
    options?: { body?: unknown; rawBody?: string; token?: string | null; headers?: Record<string, string> },
  ): Promise<ApiResponse>;
}

/**
 * One in-process sandbox on a random port per test file, reset before each test; every
 * request goes over real HTTP with fetch.
 */
export function useSandbox(options: { seed?: 'demo'; reset?: boolean } = {}): Harness {
  let defaultToken: string | undefined;
  const harness = {} as Harness;

  beforeAll(async () => {
    harness.sandbox = await startSandbox({ port: 0, seed: options.seed });
    harness.control = createSandboxControl(harness.sandbox.url);
  });
  afterAll(async () => {
    await harness.sandbox.close();
  });
  if (options.reset !== false) {
    beforeEach(async () => {
      await harness.control.reset();
      defaultToken = undefined;
    });
  }

  harness.api = async (method, path, opts = {}) => {
    const headers: Record<string, string> = { ...opts.headers };
    let token = opts.token;
    if (token === undefined) token = defaultToken ??= await harness.token();
    if (token !== null) headers.authorization ??= `Bearer ${token}`;
    let body: string | undefined = opts.rawBody;
    if (opts.body !== undefined) body = JSON.stringify(opts.body);
    if (body !== undefined) headers['content-type'] ??= 'application/json';
    const response = await fetch(`${harness.sandbox.url}${path}`, { method, headers, body });
    const text = await response.text();
    return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : undefined };
  };

  harness.token = async (accessKey = DEFAULT_ACCESS_KEY, secretKey = DEFAULT_SECRET_KEY) => {
    const response = await harness.api('POST', '/partner/v1/authenticate', {
      token: null,
      body: { access_key: accessKey, secret_key: secretKey },
    });
    if (response.status !== 200) throw new Error(`authenticate failed: ${JSON.stringify(response.body)}`);
    return response.body.token as string;
  };

  return harness;
}

/** `n` records built from a factory, for seeding through the control API. */
export function build<T extends Record<string, unknown>>(n: number, make: (i: number) => T): T[] {
  return Array.from({ length: n }, (_, i) => make(i));
}
