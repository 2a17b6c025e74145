import express, { type Request, type Response, type Router } from 'express';
import { z } from 'zod';
import { toOutcome } from '../command-consumer/outcome-events.js';
import type { Db } from '../db/prisma.js';
import { AppError } from '../errors.js';
import { COMMAND_KINDS, OUTCOME_STATUSES, type CommandKind } from '../contracts/outcomes.js';
import type { CommandRecord } from '../guard/store/command-repository.js';
import { isFinal } from '../guard/store/command-repository.js';
import type { Logger } from '../logger.js';
import { createVerifier, type Verifier } from '../receiver/signature.js';
import {
  createCommandStatusRepository,
  type ListCursor,
  type StatusRow,
} from './command-status-repository.js';

/**
 * `GET /pms/:source/commands/:command_id` and `GET /pms/:source/commands` (mounted at /pms): a
 * property-management system asks what became of the commands it sent.
 *
 * Authenticated like the source's webhooks and its customer tokens (docs/decisions/028): a
 * Standard Webhooks signature with one of the source's PMS_WEBHOOK_SECRETS, over the request
 * line `GET <path and query as sent>` in place of a body (a GET has none). The PMS already signs
 * with these secrets, rotation already works, the timestamp window bounds a replay, and the
 * signature covers the command id and filters, so a captured request answers nothing else. A
 * source sees only its own commands: every query is bounded by the path's source, and an
 * unknown source is 401 before any query.
 */
export interface CommandStatusRouterDeps {
  db: Db;
  /** PMS_WEBHOOK_SECRETS: source → secrets (several during rotation). */
  secrets: Record<string, readonly string[]>;
  toleranceSeconds: number;
  logger: Logger;
}

/** The states a status may be in: the outcome's final ones, or the guard's two before them. */
export const COMMAND_STATUSES = ['pending', 'in_flight', ...OUTCOME_STATUSES] as const;

const DEFAULT_LIMIT = 50;
const MAX_LIMIT = 200;

const listQuerySchema = z
  .object({
    since: z
      .string()
      .datetime({ offset: true })
      .transform((s) => new Date(s))
      .optional(),
    status: z
      .string()
      .transform((s) => s.split(','))
      .pipe(z.array(z.enum(COMMAND_STATUSES)))
      .optional(),
    type: z.enum(COMMAND_KINDS).optional(),
    limit: z.coerce.number().int().min(1).max(MAX_LIMIT).default(DEFAULT_LIMIT),
    cursor: z.string().max(2048).optional(),
  })
  .strict();

const oneQuerySchema = z.object({ type: z.enum(COMMAND_KINDS).optional() }).strict();

/** The request line the PMS signs in place of a body. */
export function signedRequestLine(method: string, pathAndQuery: string): Buffer {
  return Buffer.from(`${method.toUpperCase()} ${pathAndQuery}`, 'utf8');
}

/**
 * What the status endpoints answer for one command: the outcome as published on `outcomes.*`
 * (status, attempts, Partner request ids, the Partner API's error whole) once it is final;
 * before, `pending` / `in_flight` and what it waits for.
 */
export function commandStatus({ record, outcome }: StatusRow): Record<string, unknown> {
  const kind = record.commandType as CommandKind;
  const times = {
    received_at: record.createdAt.toISOString(),
    updated_at: record.updatedAt.toISOString(),
    ...(record.finishedAt && { finished_at: record.finishedAt.toISOString() }),
  };
  // The outcome as published, whole; for a command finished before outcomes were kept, rebuilt
  // from its row as the consumer builds it (without the fields only the onboarding consumers add).
  if (isFinal(record.state)) return { ...(outcome ?? toOutcome(kind, record)), ...times };
  return {
    command_id: record.commandId,
    command_source: record.source,
    command_type: kind,
    target_id: record.targetId,
    status: record.state,
    attempts: record.attempts,
    partner_request_ids: record.requestIds,
    waiting_for:
      record.state === 'in_flight'
        ? `the Partner API's answer to write ${record.attempts}, or a read-back proving whether it landed`
        : record.attempts === 0
          ? 'its first write to the Partner API'
          : `write ${record.attempts + 1} to the Partner API (a retry after a failure)`,
    ...(record.lastError && {
      last_error: record.lastError.partner_error ?? {
        code: record.lastError.code,
        status: record.lastError.status,
        message: record.lastError.message,
      },
    }),
    ...times,
  };
}

function encodeCursor(record: CommandRecord): string {
  return Buffer.from(
    JSON.stringify([record.updatedAt.toISOString(), record.commandType, record.commandId]),
    'utf8',
  ).toString('base64url');
}

function decodeCursor(text: string): ListCursor {
  try {
    const [at, type, id] = JSON.parse(Buffer.from(text, 'base64url').toString('utf8')) as unknown[];
    if (typeof at === 'string' && typeof type === 'string' && typeof id === 'string') {
      const updatedAt = new Date(at);
      if (!Number.isNaN(updatedAt.getTime())) return { updatedAt, commandType: type, commandId: id };
    }
  } catch {
    // answered below
  }
  throw new AppError(422, 'validation_error', 'cursor is not one this endpoint gave');
}

function invalid(error: z.ZodError): AppError {
  return new AppError(422, 'validation_error', 'the query does not match its schema', {
    extra: { errors: error.issues.map((i) => `${i.path.join('.') || '(query)'}: ${i.message}`) },
  });
}

export function createCommandStatusRouter(deps: CommandStatusRouterDeps): Router {
  const logger = deps.logger.child({ component: 'command-status' });
  const repository = createCommandStatusRepository(deps.db);
  const verifiers = new Map<string, Verifier>(
    Object.entries(deps.secrets).map(([source, secrets]) => [
      source,
      createVerifier(secrets, deps.toleranceSeconds),
    ]),
  );
  const router = express.Router();

  /** The path's source once the request's signature proves the caller holds its secret. */
  function authenticate(req: Request): string {
    const source = String(req.params.source);
    const verifier = verifiers.get(source);
    if (!verifier) throw new AppError(401, 'unauthenticated', 'unknown PMS source');
    verifier(signedRequestLine(req.method, req.originalUrl), req.headers);
    return source;
  }

  router.get('/:source/commands', async (req: Request, res: Response) => {
    const source = authenticate(req);
    const query = listQuerySchema.safeParse(req.query);
    if (!query.success) throw invalid(query.error);
    const { since, status, type, limit, cursor } = query.data;
    const after = cursor ? decodeCursor(cursor) : undefined;
    // One row more than the page tells whether another page follows.
    const rows = await repository.list(source, {
      ...(since && { since }),
      ...(status && { states: status }),
      ...(type && { type }),
      ...(after && { after }),
      limit: limit + 1,
    });
    const page = rows.slice(0, limit);
    const last = page.at(-1);
    res.setHeader('Cache-Control', 'no-store');
    res.status(200).json({
      data: page.map(commandStatus),
      has_more: rows.length > limit,
      next_cursor: rows.length > limit && last ? encodeCursor(last.record) : null,
    });
  });

  router.get('/:source/commands/:commandId', async (req: Request, res: Response) => {
    const source = authenticate(req);
    const query = oneQuerySchema.safeParse(req.query);
    if (!query.success) throw invalid(query.error);
    const commandId = String(req.params.commandId);
    const records = await repository.byId(source, commandId, query.data.type);
    res.setHeader('Cache-Control', 'no-store');
    if (records.length === 0) {
      logger.debug({ source, requestId: req.id }, 'command status: not found');
      throw new AppError(404, 'not_found', 'no command with this id from this source (yet)');
    }
    // Several command types may share an id (a PMS numbers decisions and payments apart): all of them.
    res.status(200).json({ data: records.map(commandStatus) });
  });

  return router;
}
