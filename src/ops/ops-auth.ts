import { createHash, timingSafeEqual } from 'node:crypto';
import type { RequestHandler } from 'express';
import { sendError } from '../http/error-envelope.js';

function digest(text: string): Buffer {
  return createHash('sha256').update(text, 'utf8').digest();
}

/**
 * Bearer `OPS_TOKEN` on every ops API call. Both sides are hashed first so that
 * `timingSafeEqual` compares equal lengths and the time taken says nothing about the token.
 * No token configured: the API is closed to everyone (401), never open.
 */
export function requireOpsToken(opsToken: string | undefined): RequestHandler {
  const expected = opsToken ? digest(opsToken) : null;
  return (req, res, next) => {
    res.setHeader('Cache-Control', 'no-store');
    if (!expected) {
      sendError(req, res, 401, 'unauthenticated', 'the ops API is disabled: OPS_TOKEN is not set');
      return;
    }
    const match = /^Bearer\s+(.+)$/i.exec(req.header('authorization') ?? '');
    if (!match?.[1]) {
      res.setHeader('WWW-Authenticate', 'Bearer realm="rentbridge-ops"');
      sendError(req, res, 401, 'unauthenticated', 'missing bearer token (Authorization: Bearer <OPS_TOKEN>)');
      return;
    }
    if (!timingSafeEqual(digest(match[1].trim()), expected)) {
      sendError(req, res, 403, 'forbidden', 'invalid ops token');
      return;
    }
    next();
  };
}
