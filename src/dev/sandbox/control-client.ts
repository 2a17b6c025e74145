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

export function createSandboxControl(baseUrl: string): SandboxControl {
  const base = baseUrl.replace(/\/+$/, '');

  async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const response = await fetch(`${base}/__sandbox${path}`, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    if (!response.ok) throw new Error(`sandbox control ${method} ${path} failed: ${response.status} ${text}`);
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
