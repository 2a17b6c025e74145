/**
 * One cell of every CSV rentbridge writes: quoted when it must be (RFC 4180), and neutralised
 * when a spreadsheet would read it as a formula. A cell beginning with `=`, `+`, `-`, `@`, a tab
 * or a carriage return gets a leading `'` (OWASP's advice on CSV injection): a PMS's
 * `=HYPERLINK(...)` command id stays text when ops open the file.
 */
const FORMULA_START = /^[=+\-@\t\r]/;

export function csvCell(value: unknown): string {
  const raw = value === null || value === undefined ? '' : String(value);
  const text = FORMULA_START.test(raw) ? `'${raw}` : raw;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}
