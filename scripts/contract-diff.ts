import { readdirSync, readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { diff as asyncapiDiff } from '@asyncapi/diff';
import { fromFile, Parser } from '@asyncapi/parser';
import jsonSchemaDiff from 'json-schema-diff';
import { parse as parseYaml } from 'yaml';

/** One breaking change: what it touches (named in CHANGELOG.md's "Upgrading" to pass) and what. */
export interface Breaking {
  subject: string;
  what: string;
}

type Schema = { properties?: Record<string, Schema>; items?: Schema; [key: string]: unknown };

/** Properties the old schema names that the new one no longer does (an open schema still accepts them). */
function removedFields(before: Schema, after: Schema | undefined, at: string): string[] {
  if (!after) return [];
  const out: string[] = [];
  for (const [name, sub] of Object.entries(before.properties ?? {})) {
    const next = after.properties?.[name];
    if (!next) out.push(`${at}${name}`);
    else out.push(...removedFields(sub, next, `${at}${name}.`));
  }
  if (before.items && after.items) out.push(...removedFields(before.items, after.items, `${at}[].`));
  return out;
}

const withoutDialect = ({ $schema: _dialect, ...schema }: Schema): Schema => schema;

/**
 * Every object that names its properties taken as closed, for json-schema-diff: a new optional
 * field of an open object would otherwise refuse the values of that name it accepted as unknown
 * (`note: 1` before, `note` a string now), and every added field would count as breaking.
 */
function closed(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(closed);
  if (!node || typeof node !== 'object') return node;
  const out = Object.fromEntries(Object.entries(node).map(([k, v]) => [k, closed(v)]));
  if ('properties' in out && !('additionalProperties' in out)) out.additionalProperties = false;
  return out;
}

/** Enum values the old schema allowed that the new one does not (json-schema-diff ignores `enum`). */
function narrowedEnums(before: Schema, after: Schema | undefined, at: string): string[] {
  if (!after) return [];
  const out: string[] = [];
  if (Array.isArray(before.enum) && Array.isArray(after.enum)) {
    const now = after.enum as unknown[];
    const gone = before.enum.filter((v) => !now.includes(v));
    if (gone.length > 0) out.push(`${at || '(root)'}: ${gone.map((v) => JSON.stringify(v)).join(', ')}`);
  }
  for (const [name, sub] of Object.entries(before.properties ?? {}))
    out.push(...narrowedEnums(sub, after.properties?.[name], at ? `${at}.${name}` : name));
  if (before.items) out.push(...narrowedEnums(before.items, after.items, `${at}[]`));
  return out;
}

/**
 * The exported JSON Schemas (docs/schemas/): json-schema-diff tells whether any value valid before
 * is refused now (a retyped field, a narrowed enum, a new required field, a tighter pattern); a
 * field the schema no longer names is a removed field.
 */
export async function schemaChanges(beforeDir: string, afterDir: string): Promise<Breaking[]> {
  const out: Breaking[] = [];
  for (const file of readdirSync(beforeDir).filter((f) => f.endsWith('.json'))) {
    const subject = `docs/schemas/${file}`;
    if (!existsSync(join(afterDir, file))) {
      out.push({ subject, what: 'the schema is gone' });
      continue;
    }
    const before = JSON.parse(readFileSync(join(beforeDir, file), 'utf8')) as Schema;
    const after = JSON.parse(readFileSync(join(afterDir, file), 'utf8')) as Schema;
    // json-schema-diff validates against draft-07 and does not load the 2020-12 meta-schema that
    // zod's export names; the keywords the exported schemas use read the same in both.
    const result = await jsonSchemaDiff.diffSchemas({
      sourceSchema: closed(withoutDialect(before)) as never,
      sourceSchemaFile: join(beforeDir, file),
      destinationSchema: closed(withoutDialect(after)) as never,
      destinationSchemaFile: join(afterDir, file),
    });
    if (result.removalsFound)
      out.push({
        subject,
        what: `refuses what it accepted: ${JSON.stringify(result.removedJsonSchema).slice(0, 300)}`,
      });
    for (const field of removedFields(before, after, ''))
      out.push({ subject, what: `field ${field} removed` });
    for (const values of narrowedEnums(before, after, ''))
      out.push({ subject, what: `enum narrowed at ${values}` });
  }
  return out;
}

type AsyncApiJson = {
  components?: {
    messages?: Record<
      string,
      { name?: string; examples?: Array<{ payload?: { id?: unknown; data?: Record<string, unknown> } }> }
    >;
  };
};

/** An example CloudEvent id with its command id and status put back as placeholders. */
function idShape(id: string, data: Record<string, unknown> = {}): string {
  let shape = id;
  for (const [field, placeholder] of [
    ['command_id', '<command-id>'],
    ['status', '<status>'],
  ] as const) {
    const value = data[field];
    if (typeof value === 'string' && value.length > 0) shape = shape.split(value).join(placeholder);
  }
  return shape;
}

/** Each message's example ids, as shapes: a shape the old document shows that the new does not is a changed id format. */
function idFormats(doc: AsyncApiJson): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  for (const [key, message] of Object.entries(doc.components?.messages ?? {})) {
    const shapes = new Set<string>();
    for (const example of message.examples ?? [])
      if (typeof example.payload?.id === 'string')
        shapes.add(idShape(example.payload.id, example.payload.data));
    if (shapes.size > 0) out.set(message.name ?? key, shapes);
  }
  return out;
}

async function parseAsyncApi(path: string): Promise<Record<string, unknown>> {
  const { document, diagnostics } = await fromFile(new Parser(), path).parse();
  if (!document) {
    const errors = diagnostics.filter((d) => d.severity === 0).map((d) => d.message);
    throw new Error(`${path} does not parse: ${errors.slice(0, 3).join('; ')}`);
  }
  return document.json() as Record<string, unknown>;
}

/**
 * The AsyncAPI document: @asyncapi/diff's breaking changes (its standard: a channel, operation or
 * message removed, ...), and each message's CloudEvent id format as its examples show it.
 */
export async function asyncApiChanges(beforePath: string, afterPath: string): Promise<Breaking[]> {
  const before = await parseAsyncApi(beforePath);
  const after = await parseAsyncApi(afterPath);
  const out: Breaking[] = [];
  const result = asyncapiDiff(before, after, { outputType: 'json' } as never);
  for (const change of result.breaking() as unknown as Array<{ path: string; action: string }>) {
    const [, section, name] = change.path.split('/');
    out.push({ subject: name ?? section ?? change.path, what: `${change.action} ${change.path} (AsyncAPI)` });
  }
  const wasShown = idFormats(before as AsyncApiJson);
  const nowShown = idFormats(after as AsyncApiJson);
  for (const [message, shapes] of wasShown) {
    const now = nowShown.get(message);
    if (!now) continue;
    const gone = [...shapes].filter((s) => !now.has(s));
    if (gone.length > 0)
      out.push({
        subject: message,
        what: `CloudEvent id format changed: ${gone.join(', ')} -> ${[...now].join(', ')}`,
      });
  }
  return out;
}

type OpenApi = {
  paths?: Record<string, Record<string, Operation>>;
};
type Operation = {
  parameters?: Array<{ name: string; in: string; required?: boolean; schema?: Schema }>;
  requestBody?: { required?: boolean; content?: Record<string, { schema?: Schema }> };
  responses?: Record<string, { content?: Record<string, { schema?: Schema }> }>;
};

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'];

/** The document with its local `$ref`s put in place (a cycle is left as the ref). */
function inlineRefs(doc: unknown): unknown {
  const at = (pointer: string): unknown =>
    pointer
      .replace(/^#\//, '')
      .split('/')
      .reduce<unknown>(
        (node, key) => (node as Record<string, unknown>)?.[key.replace(/~1/g, '/').replace(/~0/g, '~')],
        doc,
      );
  const walk = (node: unknown, seen: string[]): unknown => {
    if (Array.isArray(node)) return node.map((n) => walk(n, seen));
    if (!node || typeof node !== 'object') return node;
    const ref = (node as { $ref?: unknown }).$ref;
    if (typeof ref === 'string' && ref.startsWith('#/') && !seen.includes(ref))
      return walk(at(ref), [...seen, ref]);
    return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, walk(v, seen)]));
  };
  return walk(doc, []);
}

/**
 * The OpenAPI document (3.1; openapi-diff reads 3.0 only, decision 058): an operation removed, a
 * new required parameter, a request body that refuses what it accepted (json-schema-diff), a
 * response field removed.
 */
export async function openApiChanges(beforePath: string, afterPath: string): Promise<Breaking[]> {
  const before = inlineRefs(parseYaml(readFileSync(beforePath, 'utf8'))) as OpenApi;
  const after = inlineRefs(parseYaml(readFileSync(afterPath, 'utf8'))) as OpenApi;
  const out: Breaking[] = [];
  for (const [path, item] of Object.entries(before.paths ?? {})) {
    for (const method of METHODS.filter((m) => item[m])) {
      const subject = `${method.toUpperCase()} ${path}`;
      const was = item[method]!;
      const now = after.paths?.[path]?.[method];
      if (!now) {
        out.push({ subject, what: 'the operation is gone' });
        continue;
      }
      const had = new Set((was.parameters ?? []).map((p) => `${p.in}:${p.name}`));
      for (const p of now.parameters ?? [])
        if (p.required && !had.has(`${p.in}:${p.name}`))
          out.push({ subject, what: `new required ${p.in} parameter ${p.name}` });
      for (const [type, media] of Object.entries(was.requestBody?.content ?? {})) {
        const next = now.requestBody?.content?.[type]?.schema;
        if (!media.schema) continue;
        if (!next) {
          out.push({ subject, what: `request body ${type} no longer accepted` });
          continue;
        }
        const result = await jsonSchemaDiff.diffSchemas({
          sourceSchema: closed(withoutDialect(media.schema)) as never,
          destinationSchema: closed(withoutDialect(next)) as never,
        });
        for (const values of narrowedEnums(media.schema, next, ''))
          out.push({ subject, what: `request body enum narrowed at ${values}` });
        if (result.removalsFound)
          out.push({
            subject,
            what: `request body refuses what it accepted: ${JSON.stringify(result.removedJsonSchema).slice(0, 300)}`,
          });
      }
      for (const [code, response] of Object.entries(was.responses ?? {})) {
        for (const [type, media] of Object.entries(response.content ?? {})) {
          const next = now.responses?.[code]?.content?.[type]?.schema;
          if (media.schema && next)
            for (const field of removedFields(media.schema, next, ''))
              out.push({ subject, what: `response ${code} field ${field} removed` });
        }
      }
    }
  }
  return out;
}

/** The text of the "Upgrading" part of a version's section of CHANGELOG.md ('' when none). */
export function upgradingNotes(changelog: string, version: string): string {
  const section = new RegExp(
    String.raw`^## \[${version.replace(/\./g, '\\.')}\][^\n]*\n([\s\S]*?)(?=^## \[|(?![\s\S]))`,
    'm',
  ).exec(changelog)?.[1];
  if (!section) return '';
  return /^### Upgrading[^\n]*\n([\s\S]*?)(?=^### |(?![\s\S]))/m.exec(section)?.[1] ?? '';
}

/** The breaking changes the Upgrading notes do not name. */
export function unannounced(changes: Breaking[], notes: string): Breaking[] {
  return changes.filter((c) => !notes.includes(c.subject));
}
