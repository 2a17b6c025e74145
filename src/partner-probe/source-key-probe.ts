import { APPLICATION_DECISION_PATHS, TOKEN_RESPONSE_FIELDS } from '../partner/assumptions.js';
import { LIST_PATHS } from '../partner/endpoints.js';
import type { SourceKey } from '../partner/source-partners.js';
import { createProbeHttp, type ProbeAnswer, type ProbeHttp, type ProbeHttpOptions } from './probe-http.js';

/**
 * `rentbridge probe`, for each PMS source with a Partner API key of its own (PMS_PARTNER_KEYS,
 * issue 34): the key authenticates; it is read-only (spec 5.8) or not, and scoped (spec 5.9) or
 * not, as configured. Nothing is changed: the write check is an approval of an application id
 * that does not exist, which a read-only key answers `403 forbidden` and a writing key `404`.
 */

export interface SourceKeyRow {
  step: string;
  assumption: string;
  result: 'holds' | 'does_not_hold' | 'could_not_tell';
  evidence: string;
  request_ids: string[];
}

/** An application id no platform holds: the write check must change nothing. */
const NO_SUCH_APPLICATION = 'rentbridge-probe-no-such-application';
/** The lists whose counts tell a scoped key from the deployment key. */
const COUNTED = ['applications', 'customers', 'enrollments'] as const;

const obj = (v: unknown): Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};

function describe(a: ProbeAnswer): string {
  const code = obj(obj(a.body).error).code;
  return `${a.status}${typeof code === 'string' ? ` ${code}` : ''}`;
}

async function counts(http: ProbeHttp, seen: string[]): Promise<Record<string, number | null>> {
  const out: Record<string, number | null> = {};
  for (const resource of COUNTED) {
    const a = await http.call('GET', LIST_PATHS[resource], { query: { per_page: 1 } });
    seen.push(a.requestId);
    const total = obj(a.body).total_count;
    out[resource] = a.status === 200 && typeof total === 'number' ? total : null;
  }
  return out;
}

export async function probeSourceKeys(
  base: Omit<ProbeHttpOptions, 'accessKey' | 'secretKey'>,
  deployment: ProbeHttp,
  sources: Readonly<Record<string, SourceKey>>,
): Promise<SourceKeyRow[]> {
  const rows: SourceKeyRow[] = [];
  let deploymentCounts: Record<string, number | null> | undefined;
  for (const [source, key] of Object.entries(sources)) {
    const http = createProbeHttp({ ...base, accessKey: key.accessKey, secretKey: key.secretKey });
    const auth = await http.authenticate();
    const ok = auth.status === 200 && typeof obj(auth.body)[TOKEN_RESPONSE_FIELDS.token] === 'string';
    rows.push({
      step: `source ${source}: key authenticates`,
      assumption: `the Partner API key of PMS source "${source}" authenticates (PMS_PARTNER_KEYS)`,
      result: ok ? 'holds' : auth.status === 401 || auth.status === 200 ? 'does_not_hold' : 'could_not_tell',
      evidence: describe(auth),
      request_ids: [auth.requestId],
    });
    if (!ok) continue;

    if (key.readOnly !== undefined) {
      const path = APPLICATION_DECISION_PATHS.approve.replace('{id}', NO_SUCH_APPLICATION);
      const a = await http.call('POST', path, { body: {} });
      const readOnly = a.status === 403 ? true : a.status >= 400 && a.status < 500 ? false : null;
      rows.push({
        step: `source ${source}: key ${key.readOnly ? 'read-only' : 'may write'}`,
        assumption: `writes with the key of "${source}" are ${key.readOnly ? 'refused (403 forbidden)' : 'allowed'}`,
        result: readOnly === null ? 'could_not_tell' : readOnly === key.readOnly ? 'holds' : 'does_not_hold',
        evidence: `an approval of an application that does not exist answered ${describe(a)}`,
        request_ids: [a.requestId],
      });
    }

    if (key.scoped !== undefined) {
      const seen: string[] = [];
      deploymentCounts ??= await counts(deployment, seen);
      const own = await counts(http, seen);
      const pairs = COUNTED.map((r) => [r, own[r], deploymentCounts![r]] as const);
      const known = pairs.filter(([, o, d]) => o != null && d != null);
      const fewer = known.some(([, o, d]) => o! < d!);
      rows.push({
        step: `source ${source}: key ${key.scoped ? 'scoped' : 'sees every record'}`,
        assumption: `the key of "${source}" sees ${key.scoped ? 'fewer records than' : 'the same records as'} the deployment key`,
        result:
          known.length === 0
            ? 'could_not_tell'
            : fewer === key.scoped
              ? 'holds'
              : // A scoped key whose scope holds every record cannot be told apart by counts.
                key.scoped && known.every(([, , d]) => d === 0)
                ? 'could_not_tell'
                : 'does_not_hold',
        evidence: pairs.map(([r, o, d]) => `${r} ${o ?? '?'} of ${d ?? '?'}`).join(', '),
        request_ids: seen,
      });
    }
  }
  return rows;
}
