import express, { type Router } from 'express';
import { z } from 'zod';
import { isResource, RESOURCES } from '../../partner/resources.js';
import { Webhook } from 'standardwebhooks';
import { FAULT_KINDS } from './faults.js';
import { envelope, SandboxError } from './sandbox-error.js';
import type { SandboxState } from './sandbox-state.js';
import type { SandboxRecord } from './record-store.js';

const keyInput = z.object({
  access_key: z.string().min(1),
  secret_key: z.string().min(1),
  read_only: z.boolean().optional(),
  owner_ids: z
    .array(z.union([z.string(), z.number()]))
    .nullable()
    .optional(),
  property_group_ids: z
    .array(z.union([z.string(), z.number()]))
    .nullable()
    .optional(),
});

const limit = z.number().int().positive().nullable();
const configInput = z
  .object({
    rate_limit_per_minute: limit,
    issue_token_rate_limit_per_minute: limit,
    rate_limit_window_seconds: z.number().positive(),
    token_ttl_seconds: z.number().int().min(0),
    enhanced_security: z.boolean(),
    webhook_url: z.url().nullable(),
    webhook_secret: z
      .string()
      .nullable()
      .refine(
        (secret) => {
          if (secret === null) return true;
          try {
            new Webhook(secret);
            return true;
          } catch {
            return false;
          }
        },
        { message: 'must be a Standard Webhooks secret (whsec_<base64>)' },
      ),
    webhook_max_attempts: z.number().int().min(1),
    webhook_retry_base_ms: z.number().int().min(0),
    max_processing_ms: z.number().int().positive(),
    enrollment_payments_visible: z.boolean(),
    report_moves_updated_at: z.boolean(),
    write_visibility_delay_ms: z.number().int().min(0),
    list_lag_ms: z.number().int().min(0),
    created_at_precision: z.enum(['milliseconds', 'seconds']),
    tie_break: z.enum(['ascending', 'descending']).nullable(),
  })
  .partial()
  .strict();

const faultInput = z.object({
  method: z.string().min(1),
  path: z.string().startsWith('/'),
  kind: z.enum(FAULT_KINDS),
  status: z.number().int().min(100).max(599).nullable().optional(),
  code: z.string().nullable().optional(),
  delay_ms: z.number().int().min(0).optional(),
  times: z.number().int().positive().nullable().optional(),
  // Envelope fields beyond status, code and request id (which the fault and request decide).
  envelope: z
    .record(z.string(), z.unknown())
    .refine((e) => !['status', 'code', 'request_id'].some((k) => k in e), {
      message: 'status, code and request_id are set by the fault, not by envelope',
    })
    .optional(),
});

function parse<T>(schema: z.ZodType<T>, value: unknown): T {
  const result = schema.safeParse(value);
  if (!result.success) {
    const errors = result.error.issues.map((issue) => `${issue.path.join('.') || 'body'}: ${issue.message}`);
    throw new SandboxError(400, 'validation_error', errors.join('; '), { extra: { errors } });
  }
  return result.data;
}

function resourceOf(name: string) {
  if (!isResource(name))
    throw new SandboxError(404, 'not_found', `unknown resource ${name}; one of ${RESOURCES.join(', ')}`);
  return name;
}

function idOf(raw: string): number {
  const id = /^\d+$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(id)) throw new SandboxError(404, 'not_found', 'no such record');
  return id;
}

/**
 * The control API of DESIGN.md ("Sandbox control API"), under `/__sandbox`: seed and change
 * records, manage keys and settings, inject faults, read the ledger and webhook deliveries.
 * Never rate limited, never authenticated: it exists only on the sandbox.
 */
export function controlApi(state: SandboxState): Router {
  const router = express.Router();
  // Large enough to seed 100,000 records in one request.
  router.use(express.json({ limit: '512mb' }));

  router.post('/reset', (_req, res) => {
    state.reset();
    res.json({ ok: true });
  });

  router.get('/records/:resource', (req, res) => {
    const collection = state.store.collection(resourceOf(req.params.resource));
    res.json({ items: [...collection.values()].sort((a, b) => a.id - b.id) });
  });

  router.post('/records/:resource', (req, res) => {
    const resource = resourceOf(req.params.resource);
    const input: unknown = req.body;
    const list = Array.isArray(input) ? input : [input];
    if (!list.every((r) => r !== null && typeof r === 'object' && !Array.isArray(r)))
      throw new SandboxError(400, 'validation_error', 'body must be an array of records', {
        extra: { errors: ['body must be an array of objects'] },
      });
    const collection = state.store.collection(resource);
    const now = new Date().toISOString();
    const items: SandboxRecord[] = (list as Array<Record<string, unknown>>).map((fields) =>
      collection.insert(fields, now),
    );
    for (const record of items) state.changed(resource, record);
    res.status(201).json({ items });
  });

  router.patch('/records/:resource/:id', (req, res) => {
    const resource = resourceOf(req.params.resource);
    const fields: unknown = req.body;
    if (fields === null || typeof fields !== 'object' || Array.isArray(fields))
      throw new SandboxError(400, 'validation_error', 'body must be an object', {
        extra: { errors: ['body must be an object'] },
      });
    const record = state.store
      .collection(resource)
      .patch(idOf(req.params.id), fields as Record<string, unknown>);
    if (!record) throw new SandboxError(404, 'not_found', 'no such record');
    state.changed(resource, record);
    res.json(record);
  });

  router.delete('/records/:resource/:id', (req, res) => {
    const resource = resourceOf(req.params.resource);
    const record = state.store.collection(resource).delete(idOf(req.params.id));
    if (!record) throw new SandboxError(404, 'not_found', 'no such record');
    state.changed(resource, record, 'deleted');
    res.status(204).end();
  });

  router.get('/keys', (_req, res) => {
    res.json({
      keys: state.keys.list().map(({ generation: _generation, secret_key: _secret, ...key }) => key),
    });
  });

  router.post('/keys', (req, res) => {
    const key = state.keys.add(parse(keyInput, req.body));
    const { generation: _generation, ...shown } = key;
    res.status(201).json(shown);
  });

  router.delete('/keys/:access_key', (req, res) => {
    if (!state.keys.revoke(req.params.access_key)) throw new SandboxError(404, 'not_found', 'no such key');
    res.status(204).end();
  });

  router.get('/config', (_req, res) => {
    res.json(state.config);
  });

  router.put('/config', (req, res) => {
    const changes = parse(configInput, req.body ?? {});
    state.config = { ...state.config, ...changes };
    res.json(state.config);
  });

  router.get('/faults', (_req, res) => {
    res.json({ faults: state.faults.list() });
  });

  router.post('/faults', (req, res) => {
    res.status(201).json(state.faults.add(parse(faultInput, req.body)));
  });

  router.delete('/faults', (_req, res) => {
    state.faults.clear();
    res.status(204).end();
  });

  router.get('/ledger', (_req, res) => {
    res.json({ writes: state.ledger.list() });
  });

  router.get('/webhooks', (_req, res) => {
    res.json({ deliveries: state.webhooks.list() });
  });

  router.use((req, res) => {
    res
      .status(404)
      .json(
        envelope(
          req.id,
          new SandboxError(404, 'not_found', `no control route for ${req.method} ${req.path}`),
        ),
      );
  });

  return router;
}
