import type { ErrorRequestHandler, Request, RequestHandler, Response } from 'express';
import { AppError } from '../errors.js';
import type { Logger } from '../logger.js';

/** The Partner API's error envelope (spec 7.1), which our own HTTP APIs answer with too. */
export function sendError(
  req: Request,
  res: Response,
  status: number,
  code: string,
  message: string,
  extra: Record<string, unknown> = {},
): void {
  res.status(status).json({ error: { message, status, code, request_id: req.id, ...extra } });
}

/** 404 in the envelope for any path no router took. */
export function notFound(): RequestHandler {
  return (req, res) => sendError(req, res, 404, 'not_found', `no route for ${req.method} ${req.path}`);
}

/**
 * The one error handler: AppErrors answer with their status and code; body-parser's errors
 * (bad JSON, too large) with theirs; anything else is a 500 `api_error`, logged with its stack.
 */
export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (error: unknown, req, res, _next) => {
    if (error instanceof AppError) {
      sendError(req, res, error.status, error.code, error.message, error.extra);
      return;
    }
    const e = error as { type?: string; status?: number; message?: string };
    if (e.type === 'entity.too.large') {
      sendError(req, res, 413, 'payload_too_large', 'request body is larger than the limit');
      return;
    }
    if (
      e.type === 'entity.parse.failed' ||
      e.type === 'encoding.unsupported' ||
      e.type === 'charset.unsupported'
    ) {
      sendError(req, res, 400, 'invalid_request_body', 'request body is not valid JSON');
      return;
    }
    if (error instanceof URIError) {
      // The router could not decode a path segment (`%`, `%E0%A4%A`): the caller's mistake.
      sendError(req, res, 400, 'invalid_request', 'the path is not valid percent-encoding');
      return;
    }
    if (typeof e.status === 'number' && e.status >= 400 && e.status < 500) {
      // Any other client error raised by express or body-parser keeps its status.
      sendError(req, res, e.status, 'invalid_request', e.message || 'invalid request');
      return;
    }
    logger.error({ err: error, requestId: req.id, path: req.path }, 'unhandled error in HTTP handler');
    sendError(req, res, 500, 'api_error', 'internal error');
  };
}
