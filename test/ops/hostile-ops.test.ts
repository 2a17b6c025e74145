import { request as httpRequest } from 'node:http';
import { beforeAll, describe, expect, it } from 'vitest';
import { TOPICS } from '../../src/kafka/topics.js';
import { buildDecisionLetter, seedLetter } from '../dead-letters/build-dead-letter.js';
import { useApp } from '../support/app.js';
import type { TestDatabase } from '../support/db.js';
import type { TestKafka } from '../support/kafka.js';

/**
 * The ops API as a careless operator or a hostile caller meets it (issue 14, points 2, 3, 5,
 * 10): bodies it cannot read, broken percent-encoding, NUL and far dates in filters, wildcards
 * in a search, an absolute-form request line. Each is a 4xx in the envelope, never a 500 and
 * never an action taken with no options.
 */
const TOKEN = 'ops-token-0123456789abcdef';

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- response bodies are asserted field by field
type Json = any;

describe('ops API under hostile input', () => {
  const app = useApp({ topics: [TOPICS.applicationDecisions], producer: true, ops: { opsToken: TOKEN } });
  let database: TestDatabase;
  let kafka: TestKafka;
  let base: string;

  beforeAll(() => ({ database, kafka, base } = app));

  const call = (path: string, init: RequestInit = {}) => {
    const headers = new Headers(init.headers);
    headers.set('authorization', `Bearer ${TOKEN}`);
    return fetch(`${base}${path}`, { ...init, headers });
  };

  async function letterState(id: number): Promise<{ state: string; audits: number }> {
    const letter = (await (await call(`/ops/api/dead-letters/${id}`)).json()) as Json;
    return { state: letter.letter.state, audits: letter.audit.length };
  }

  describe('when a redrive or discard body is not JSON', () => {
    it.each([
      ['a form (curl -d)', 'application/x-www-form-urlencoded', '{"dry_run":true,"reason":"look only"}'],
      ['plain text', 'text/plain', '{"dry_run":true}'],
      ['no content type', '', 'dry_run=true'],
    ])('refuses %s with 415 and leaves the letter open', async (_name, type, body) => {
      const id = await seedLetter(database.db, kafka.prefix, buildDecisionLetter(kafka.prefix));
      const headers: Record<string, string> = {};
      if (type) headers['content-type'] = type;
      for (const action of ['redrive', 'discard']) {
        const res = await fetch(`${base}/ops/api/dead-letters/${id}/${action}`, {
          method: 'POST',
          body: type ? body : Buffer.from(body),
          headers: { authorization: `Bearer ${TOKEN}`, ...headers },
        });
        expect(res.status).toBe(415);
        expect(((await res.json()) as Json).error).toMatchObject({
          status: 415,
          code: 'unsupported_media_type',
        });
      }
      expect(await letterState(id)).toEqual({ state: 'open', audits: 0 });
    });

    it('refuses a JSON body that is not an object with 400', async () => {
      const id = await seedLetter(database.db, kafka.prefix, buildDecisionLetter(kafka.prefix));
      const res = await call(`/ops/api/dead-letters/${id}/redrive`, {
        method: 'POST',
        body: '[true]',
        headers: { 'content-type': 'application/json' },
      });
      expect(res.status).toBe(400);
      expect(await letterState(id)).toEqual({ state: 'open', audits: 0 });
    });

    it('still takes a JSON dry run as one', async () => {
      const id = await seedLetter(database.db, kafka.prefix, buildDecisionLetter(kafka.prefix));
      const res = await call(`/ops/api/dead-letters/${id}/redrive`, {
        method: 'POST',
        body: JSON.stringify({ dry_run: true, reason: 'look only' }),
        headers: { 'content-type': 'application/json; charset=utf-8' },
      });
      expect(res.status).toBe(200);
      expect((await letterState(id)).state).toBe('open');
    });
  });

  describe('when the path is not valid percent-encoding', () => {
    it.each(['/ops/api/dead-letters/%', '/ops/api/dead-letters/%E0%A4%A/redrive'])(
      'answers 400 in the envelope for %s',
      async (path) => {
        const res = await call(path, path.endsWith('redrive') ? { method: 'POST' } : {});
        expect(res.status).toBe(400);
        expect(((await res.json()) as Json).error).toMatchObject({
          status: 400,
          request_id: expect.any(String),
        });
      },
    );
  });

  describe('when a filter holds what PostgreSQL cannot take', () => {
    it.each([
      'search=a%00b',
      'key=%00',
      'topic=x%00',
      'since=99999',
      'since=0000-01-01',
      'until=-000001-01-01',
      'since=+275760-09-13T00:00:00Z',
    ])('answers 400 for %s', async (query) => {
      const res = await call(`/ops/api/dead-letters?${query}`);
      expect(res.status).toBe(400);
      expect(((await res.json()) as Json).error).toMatchObject({ status: 400, code: 'validation_error' });
    });

    it('accepts dates at the ends of the range', async () => {
      expect((await call('/ops/api/dead-letters?since=0001-01-01&until=9999-12-31')).status).toBe(200);
    });

    it.each([
      '/ops/api/audit?actor=%00',
      '/ops/api/audit?target=dead_letter%3A1%00',
      '/ops/api/audit?action=redrive%00',
      '/ops/api/audit?since=0000-01-01',
      '/ops/api/audit?until=+275760-09-13T00:00:00Z',
      '/ops/api/audit?limit=0',
      '/ops/api/trace/a%00b',
    ])('answers 400 for the other lists too: %s', async (path) => {
      const res = await call(path);
      expect(res.status).toBe(400);
      expect(((await res.json()) as Json).error).toMatchObject({ status: 400, code: 'validation_error' });
    });

    it('filters the audit by date like the dead letters', async () => {
      const id = await seedLetter(database.db, kafka.prefix, buildDecisionLetter(kafka.prefix));
      const discard = await call(`/ops/api/dead-letters/${id}/discard`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ reason: 'dated audit' }),
      });
      expect(discard.status).toBe(200);
      const target = `dead_letter:${id}`;
      const future = (await (await call(`/ops/api/audit?target=${target}&since=9999-01-01`)).json()) as Json;
      expect(future.items).toEqual([]);
      const past = (await (await call(`/ops/api/audit?target=${target}&since=0001-01-01`)).json()) as Json;
      expect(past.items.map((i: Json) => i.action)).toEqual(['discard']);
    });
  });

  describe('when a search holds % or _', () => {
    it('takes them literally', async () => {
      const percent = await seedLetter(
        database.db,
        kafka.prefix,
        buildDecisionLetter(kafka.prefix, { errorMessage: 'budget at 100% for the minute' }),
      );
      const underscore = await seedLetter(
        database.db,
        kafka.prefix,
        buildDecisionLetter(kafka.prefix, { errorMessage: 'field a_b refused' }),
      );
      // Only letters of this test have these texts; the others must not match a wildcard.
      const ids = async (search: string) =>
        (
          (await (
            await call(`/ops/api/dead-letters?state=all&search=${encodeURIComponent(search)}`)
          ).json()) as Json
        ).items.map((i: { id: number }) => i.id);
      expect(await ids('%')).toEqual([percent]);
      expect(await ids('a_b')).toEqual([underscore]);
      expect(await ids('a_')).toEqual([underscore]);
    });
  });

  describe('when the request line is in absolute form', () => {
    it('redirects to a path on this server, never to the host the line names', async () => {
      const { port } = new URL(base);
      const location = await new Promise<string | undefined>((resolve, reject) => {
        const req = httpRequest(
          { host: '127.0.0.1', port, method: 'GET', path: 'http://other.example/ops?x=1' },
          (res) => {
            res.resume();
            resolve(res.headers.location);
          },
        );
        req.on('error', reject);
        req.end();
      });
      expect(location).toBe('/ops/?x=1');
    });
  });
});
