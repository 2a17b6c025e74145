import { randomUUID } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import { REQUEST_ID_PATTERN } from '../partner/transport.js';

export { REQUEST_ID_PATTERN };

export function acceptRequestId(value: unknown): string {
  return typeof value === 'string' && REQUEST_ID_PATTERN.test(value) ? value : randomUUID();
}

declare module 'express-serve-static-core' {
  interface Request {
    /** The request's id, echoed in `X-Request-Id` and in every error envelope. */
    id: string;
  }
}

/** Gives every request an id (the caller's, when valid) and echoes it in `X-Request-Id`. */
export function requestId() {
  return (req: Request, res: Response, next: NextFunction) => {
    req.id = acceptRequestId(req.headers['x-request-id']);
    res.setHeader('X-Request-Id', req.id);
    next();
  };
}
