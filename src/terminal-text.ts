/**
 * Text from outside (a PMS's ids, a callback endpoint's answer, a webhook's source name) shown on
 * an operator's terminal: every control character escaped, so that data can never move the
 * cursor, clear the screen, retitle the window or hide itself (ESC, BEL, CR, the C1 range, DEL).
 * The one helper of every CLI table and of the readable log format (src/log-format.ts).
 */
// eslint-disable-next-line no-control-regex -- control characters are exactly what is escaped
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g;

const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t', '\u001b': '\\e' };

export function terminalSafe(text: string): string {
  return text.replace(CONTROL, (c) => NAMED[c] ?? `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
