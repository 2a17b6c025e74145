import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { FaultInput, Fault } from './faults.js';
import type { SandboxRecord } from './record-store.js';
import type { SandboxConfig } from './sandbox-config.js';
import type { WebhookDelivery } from './webhook-dispatcher.js';
import type { LedgerEntry } from './write-ledger.js';
import type { Resource } from '../../partner/resources.js';

export type { Fault, FaultInput, LedgerEntry, SandboxConfig, SandboxRecord, WebhookDelivery };

export interface KeyInput {
  access_key: string;
  secret_key: string;
  read_only?: boolean;
  owner_ids?: Array<string | number>;
  property_group_ids?: Array<string | number>;
}

/** A typed client of the sandbox's control API (DESIGN.md "Sandbox control API"). */
export interface SandboxControl {
  reset(): Promise<void>;
  addRecords(resource: Resource, records: Array<Record<string, unknown>>): Promise<SandboxRecord[]>;
  records(resource: Resource): Promise<SandboxRecord[]>;
  patchRecord(resource: Resource, id: number, fields: Record<string, unknown>): Promise<SandboxRecord>;
  deleteRecord(resource: Resource, id: number): Promise<void>;
  createKey(key: KeyInput): Promise<void>;
  revokeKey(accessKey: string): Promise<void>;
  setConfig(config: Partial<SandboxConfig>): Promise<SandboxConfig>;
  addFault(fault: FaultInput): Promise<Fault>;
  /** The faults still in force (a fault used up its `times` is gone). */
  faults(): Promise<Fault[]>;
  clearFaults(): Promise<void>;
  ledger(): Promise<{ writes: LedgerEntry[] }>;
  webhooks(): Promise<WebhookDelivery[]>;
}

/**
 * One control request on a connection of its own (`agent: false`: `Connection: close`), never on a
 * pooled keep-alive socket. `fetch` shares one pool per origin with every other client of the
 * sandbox in the process (the Partner API client's calls, other control clients) and reuses an idle
 * socket it believes open: when the sandbox closes that socket first (its keep-alive timeout, 5 s,
 * against the pool's of 5 s less a second or two, checked by a coarse timer; or a sandbox closed
 * and started again on the port) the request is written to a closed socket and fails with
 * ECONNRESET / "other side closed". Retrying would send a POST (records, faults) twice whenever
 * the first did arrive; a fresh connection leaves nothing to race. On localhost it costs well
 * under a millisecond a call.
 */
function send(url: URL, method: string, body: string | undefined): Promise<{ status: number; text: string }> {
  const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
  const headers: Record<string, string | number> =
    body === undefined
      ? {}
      : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) };
  return new Promise((resolve, reject) => {
    const req = request(url, { method, agent: false, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }),
      );
    });
    req.on('error', reject);
    req.end(body);
  });
}

export function createSandboxControl(baseUrl: string): SandboxControl {
  const base = baseUrl.replace(/\/+$/, '');

  async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const url = new URL(`${base}/__sandbox${path}`);
    const { status, text } = await send(url, method, body === undefined ? undefined : JSON.stringify(body));
    if (status < 200 || status > 299)
      throw new Error(`sandbox control ${method} ${path} failed: ${status} ${text}`);
    return (text ? JSON.parse(text) : undefined) as T;
  }

  return {
    reset: async () => {
      await call('POST', '/reset');
    },
    addRecords: async (resource, records) =>
      (await call<{ items: SandboxRecord[] }>('POST', `/records/${resource}`, records)).items,
    records: async (resource) =>
      (await call<{ items: SandboxRecord[] }>('GET', `/records/${resource}`)).items,
    patchRecord: (resource, id, fields) => call('PATCH', `/records/${resource}/${id}`, fields),
    deleteRecord: async (resource, id) => {
      await call('DELETE', `/records/${resource}/${id}`);
    },
    createKey: async (key) => {
      await call('POST', '/keys', key);
    },
    revokeKey: async (accessKey) => {
      await call('DELETE', `/keys/${encodeURIComponent(accessKey)}`);
    },
    setConfig: (config) => call('PUT', '/config', config),
    addFault: (fault) => call('POST', '/faults', fault),
    faults: async () => (await call<{ faults: Fault[] }>('GET', '/faults')).faults,
    clearFaults: async () => {
      await call('DELETE', '/faults');
    },
    ledger: () => call('GET', '/ledger'),
    webhooks: async () => (await call<{ deliveries: WebhookDelivery[] }>('GET', '/webhooks')).deliveries,
  };
}
