import type { DestinationStream } from 'pino';
import { terminalSafe } from './terminal-text.js';

/**
 * How log lines reach the terminal (LOG_FORMAT): JSON for machines (a log shipper, a pipe, a
 * file), short readable lines for a person at a terminal. Unset: readable when stdout is a
 * terminal, JSON otherwise. A small formatter of our own rather than pino-pretty: it needs one
 * line per record, the fields that matter, and no dependency in production.
 */
export type LogFormat = 'json' | 'pretty';

export function resolveLogFormat(
  given: LogFormat | undefined,
  isTty = process.stdout.isTTY === true,
): LogFormat {
  return given ?? (isTty ? 'pretty' : 'json');
}

const LEVEL_MARK: Record<string, string> = {
  trace: 'TRACE',
  debug: 'DEBUG',
  info: 'INFO ',
  warn: 'WARN ',
  error: 'ERROR',
  fatal: 'FATAL',
};

/** Fields every line carries, shown by position (time, level, component) or not at all. */
const HIDDEN = new Set(['level', 'time', 'pid', 'hostname', 'name', 'msg', 'component', 'err', 'error']);
/** A field longer than this is cut: a line stays one line. */
const MAX_FIELD = 80;

function show(value: unknown): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  const plain = text === undefined ? String(value) : text;
  const oneLine = terminalSafe(plain.replace(/[ \t\n\r]+/g, ' '));
  return oneLine.length > MAX_FIELD ? `${oneLine.slice(0, MAX_FIELD - 1)}…` : oneLine;
}

function errorText(value: unknown): string | null {
  if (!value || typeof value !== 'object') return null;
  const e = value as { type?: string; message?: string; code?: string };
  return [e.type, e.code, e.message].filter(Boolean).join(': ') || null;
}

/** One JSON record as a readable line: `12:04:05 INFO  relay  published 3 events  topic=...`. */
export function formatLine(json: string): string {
  let record: Record<string, unknown>;
  try {
    record = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return terminalSafe(json.trimEnd());
  }
  const time = typeof record.time === 'string' ? record.time.slice(11, 19) : '';
  const level = LEVEL_MARK[String(record.level)] ?? String(record.level).toUpperCase();
  const component = typeof record.component === 'string' ? ` ${record.component}` : '';
  const fields = Object.entries(record)
    .filter(([k, v]) => !HIDDEN.has(k) && v !== undefined && v !== null)
    .map(([k, v]) => `${terminalSafe(k)}=${show(v)}`);
  const err = errorText(record.err) ?? errorText(record.error);
  // Every text of the record is data (a source name from an unauthenticated webhook path, an
  // error message from the network): escaped, so it cannot drive the operator's terminal.
  const parts = [`${time} ${level}${terminalSafe(component)}`, terminalSafe(String(record.msg ?? ''))];
  if (err) parts.push(`(${show(err)})`);
  if (fields.length > 0) parts.push(fields.join(' '));
  return parts.join('  ');
}

/** A pino destination writing readable lines to `out` (default: stdout). */
export function prettyDestination(out: NodeJS.WritableStream = process.stdout): DestinationStream {
  return {
    write(chunk: string) {
      for (const line of chunk.split('\n')) if (line.trim()) out.write(`${formatLine(line)}\n`);
    },
  };
}
