/**
 * The settings given per PMS source (webhook secrets, Partner API keys, budget weights), parsed by
 * zod as part of the one config schema (config.ts).
 */
import { z } from 'zod';
import { secretJson } from './secret-json.js';

/** A JSON object of source name → list of Standard Webhooks secrets (`whsec_...`). */
export const secretsBySource = secretJson('{"acme":["whsec_..."]}').pipe(
  z.record(z.string().regex(/^[a-z0-9_-]+$/i), z.array(z.string().min(1)).min(1)),
);

/**
 * A JSON object of source name → that source's own Partner API key pair (issue 34): every Partner
 * API call made for the source uses it, so a scoped or read-only key (spec 5.8, 5.9) bounds what
 * the source can reach. `read_only` / `scoped` say what the key is meant to be; `rentbridge probe`
 * checks them.
 */
export const partnerKeysBySource = secretJson('{"acme":{"access_key":"...","secret_key":"..."}}').pipe(
  z.record(
    z.string().regex(/^[a-z0-9_-]+$/i),
    z
      .object({
        access_key: z.string().min(1),
        secret_key: z.string().min(1),
        read_only: z.boolean().optional(),
        scoped: z.boolean().optional(),
      })
      .strict(),
  ),
);

/** PMS_WEIGHTS: source name → its weight in the shared budget's round-robin (issue 52). */
export const weightsBySource = z
  .string()
  .transform((v, ctx) => {
    try {
      return JSON.parse(v) as unknown;
    } catch {
      ctx.addIssue({ code: 'custom', message: 'must be JSON, e.g. {"acme":3}' });
      return z.NEVER;
    }
  })
  .pipe(z.record(z.string(), z.number().positive('a weight above 0').max(1000, 'a weight of at most 1000')))
  .superRefine((weights, ctx) => {
    for (const source of Object.keys(weights))
      if (!/^[a-z0-9_-]+$/i.test(source))
        ctx.addIssue({
          code: 'custom',
          message: `"${source}" is not a source name (letters, digits, _ and -)`,
        });
  });
