import { z } from 'zod';

/**
 * A setting holding JSON with secrets in it (PMS_WEBHOOK_SECRETS, PMS_PARTNER_KEYS, PMS_CALLBACKS):
 * parsed, or refused with an example of its shape, never with the value itself.
 */
export function secretJson(example: string) {
  return z.string().transform((v, ctx) => {
    try {
      return JSON.parse(v) as unknown;
    } catch {
      ctx.addIssue({ code: 'custom', message: `must be JSON, e.g. ${example}` });
      return z.NEVER;
    }
  });
}
