/**
 * Splits Prisma's `?schema=name` out of a PostgreSQL URL: node-postgres does not know it, so the
 * schema travels separately (Prisma's adapter option, and the connection's search_path).
 */
export function parseDatabaseUrl(url: string): { connectionString: string; schema: string } {
  const u = new URL(url);
  const schema = u.searchParams.get('schema') ?? 'public';
  u.searchParams.delete('schema');
  return { connectionString: u.toString(), schema };
}

/** The same database with another schema: tests use one schema per file. */
export function withSchema(url: string, schema: string): string {
  const u = new URL(url);
  u.searchParams.set('schema', schema);
  return u.toString();
}

/** Quotes an SQL identifier. */
export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
