import { randomUUID } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';

/** Spec 7.3: 1 to 128 characters of A-Z a-z 0-9 _ . - are kept; anything else is replaced. */
export const REQUEST_ID_PATTERN = /^[A-Za-z0-9_.-]{1,128}$/;

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
    req.id = acceptRequestId(req.header('x-request-id'));
    res.setHeader('X-Request-Id', req.id);
    next();
  };
}
