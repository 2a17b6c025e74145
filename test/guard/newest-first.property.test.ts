import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { customerRegistrationReadBack } from '../../src/command-types/customer-registrations/customer-registration-read-back.js';
import { enrollmentReadBack } from '../../src/command-types/enrollments/enrollment-read-back.js';
import type { Marker } from '../../src/guard/read-backs/newest-first.js';
import type { GuardPartner } from '../../src/guard/read-backs/partner-port.js';
import type { ReadContext } from '../../src/guard/read-backs/read-back.js';
import type { PartnerClient } from '../../src/partner/index.js';
import type { SandboxControl } from '../../src/dev/sandbox/control-client.js';
import type { Sandbox } from '../../src/dev/sandbox/index.js';
import { startSandboxPartner } from '../support/sandbox.js';

/**
 * The onboarding read-back (decision 018, issue 30) over random orderings the spec allows, on the
 * real sandbox: `created_at` to the second or the millisecond, ties by ascending or descending id,
 * customers created in bursts (same millisecond, same second, a second apart), pages of 1 to 5
 * records (so the snapshot page may not hold every record tied with its newest), a customer that
 * held the e-mail before the snapshot, ours or someone else's created after it anywhere in a
 * stream of others. The verdict must be the one the model gives: never `not_applied` when ours
 * landed, never `applied` when it did not, and `unknown` only where the evidence cannot tell.
 */

type Precision = 'seconds' | 'milliseconds';
type TieBreak = 'ascending' | 'descending';
type PostKind = 'none' | 'ours' | 'impostor';

const ctx: ReadContext = { nextReadId: () => `prop-${Math.random().toString(36).slice(2)}` };
/** Milliseconds between two creations: same instant, same second, across a second. */
const gap = fc.constantFrom(0, 1, 7, 250, 999, 1000, 1400);
const precision = fc.constantFrom<Precision>('seconds', 'milliseconds');
const tieBreak = fc.constantFrom<TieBreak>('ascending', 'descending');
const pageSize = fc.constantFrom(1, 2, 3, 5);
/** Each property makes a few hundred sandbox requests: room for a loaded machine. */
const PROPERTY_TIMEOUT_MS = 180_000;

/** The list's own order of this run's records: created_at newest first, ties by id as configured. */
function sorted<T extends { id: number; at: string }>(records: T[], tie: TieBreak): T[] {
  return [...records].sort((a, b) => {
    const d = Date.parse(b.at) - Date.parse(a.at);
    return d !== 0 ? d : tie === 'ascending' ? a.id - b.id : b.id - a.id;
  });
}

function stamp(ms: number, p: Precision): string {
  const iso = new Date(ms).toISOString();
  return p === 'seconds' ? new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z') : iso;
}

describe('the onboarding read-back over every ordering the spec allows (property)', () => {
  let sandbox: Sandbox;
  let control: SandboxControl;
  let partner: PartnerClient;
  /** Each run starts a day after the last: its records are the newest in the sandbox. */
  let day = Date.parse('2040-01-01T00:00:00Z');
  let seq = 0;

  /** The real client, asking for pages of `size` records (the read-back asks for 1,000). */
  const paged = (size: number): GuardPartner =>
    ({
      listPage: (resource, query, options) =>
        partner.listPage(resource, { ...query, per_page: size }, options),
    }) as Pick<GuardPartner, 'listPage'> as GuardPartner;

  beforeAll(async () => {
    ({ sandbox, control, partner } = await startSandboxPartner());
    // Many short pages: no rate limit in the way.
    await control.setConfig({ rate_limit_per_minute: null });
    // Something older than every run, so that a page of ties is never the list's end.
    await control.addRecords('customers', [
      { email: 'oldest@example.com', created_at: '2001-01-01T00:00:00Z' },
    ]);
  });
  afterAll(async () => {
    await sandbox?.close();
  });

  const scenario = fc
    .record({
      precision,
      tieBreak,
      pageSize,
      start: fc.integer({ min: 0, max: 999 }),
      prior: fc.array(gap, { minLength: 1, maxLength: 6 }),
      heldBefore: fc.option(fc.nat({ max: 5 }), { nil: null }),
      post: fc.array(gap, { minLength: 1, maxLength: 6 }),
      kind: fc.constantFrom<PostKind>('none', 'ours', 'impostor'),
      at: fc.nat({ max: 5 }),
    })
    .map((s) => {
      const heldBefore = s.heldBefore === null ? null : s.heldBefore % s.prior.length;
      // The e-mail is unique: held before the snapshot, nobody (ours included) gets it after.
      return {
        ...s,
        heldBefore,
        kind: heldBefore === null ? s.kind : ('none' as const),
        at: s.at % s.post.length,
      };
    });

  it(
    'customer registration: applied exactly when ours landed, unknown only where the evidence cannot tell',
    async () => {
      await fc.assert(
        fc.asyncProperty(scenario, async (s) => {
          await control.setConfig({ created_at_precision: s.precision, tie_break: s.tieBreak });
          const n = ++seq;
          const email = `prop-${n}@example.com`;
          const command = {
            registration_id: `reg-prop-${n}`,
            pms_reference: `t-${n}`,
            first_name: 'Ada',
            last_name: 'Lovelace',
            email,
            phone: '5551234567',
          };
          day += 86_400_000;
          let t = day + s.start;
          const person = (i: string, gapMs: number, overrides: Record<string, unknown> = {}) => {
            t += gapMs;
            return {
              first_name: 'P',
              last_name: i,
              email: `prop-${n}-${i}@example.com`,
              phone: '5550000000',
              created_at: stamp(t, s.precision),
              ...overrides,
            };
          };
          const holder = { email, first_name: 'Ada', last_name: 'Lovelace', phone: '5551234567' };
          const prior = await control.addRecords(
            'customers',
            s.prior.map((g, i) => person(`p${i}`, g, i === s.heldBefore ? holder : {})),
          );
          const strategy = customerRegistrationReadBack(paged(s.pageSize));
          const snapshot = await strategy.snapshot(command, ctx);

          // The model of the snapshot: the page as the configured order shows it, its newest record.
          const priorRecs = prior.map((r) => ({ id: Number(r.id), at: String(r.created_at) }));
          const page = sorted(priorRecs, s.tieBreak).slice(0, s.pageSize);
          const markerAt = Date.parse(page[0]!.at);
          const tiedCount = priorRecs.filter((r) => Date.parse(r.at) === markerAt).length;
          const tiedComplete = tiedCount < s.pageSize;
          const marker = snapshot.marker as Marker;
          expect(marker.id).toBe(String(page[0]!.id));
          expect(marker.tied_ids).toEqual(
            page.filter((r) => Date.parse(r.at) === markerAt).map((r) => String(r.id)),
          );
          expect(marker.tied_complete).toBe(tiedComplete);

          const postIn = s.post.map((g, i) => {
            if (i !== s.at || s.kind === 'none') return person(`q${i}`, g);
            if (s.kind === 'ours') return person('ours', g, holder);
            return person('impostor', g, { email, first_name: 'Grace' });
          });
          const post = await control.addRecords('customers', postIn);
          const verdict = await strategy.verdict(command, snapshot, ctx);

          let expected: string;
          const withEmail = post.find((r) => r.email === email);
          const tiedWithMarker = (r: { created_at: unknown }) =>
            Date.parse(String(r.created_at)) === markerAt;
          if (s.kind === 'ours')
            expected = tiedWithMarker(withEmail!) && !tiedComplete ? 'unknown' : 'applied';
          else if (s.kind === 'impostor') expected = 'unknown';
          else {
            // A customer holding the e-mail before the snapshot is never ours; it makes the verdict
            // unknown only when it ties with the marker and the snapshot page could not show it.
            const held = s.heldBefore === null ? null : prior[s.heldBefore]!;
            const unseenTie =
              held !== null && tiedWithMarker(held) && !page.some((r) => r.id === Number(held.id));
            expected = unseenTie && !tiedComplete ? 'unknown' : 'not_applied';
          }
          expect({ scenario: s, verdict }).toEqual({ scenario: s, verdict: expected });

          // A marker without created_at (stored by a platform that omits it): never not_applied; ours
          // is still proven by its place before the marker.
          const blind = { ...snapshot, marker: { id: marker.id, created_at: null } };
          const blindVerdict = await strategy.verdict(command, blind, ctx);
          const ordered = sorted(
            [...priorRecs, ...post.map((r) => ({ id: Number(r.id), at: String(r.created_at) }))],
            s.tieBreak,
          );
          const oursFirst =
            s.kind === 'ours' &&
            ordered.findIndex((r) => r.id === Number(withEmail!.id)) <
              ordered.findIndex((r) => String(r.id) === marker.id);
          expect({ scenario: s, blindVerdict }).toEqual({
            scenario: s,
            blindVerdict: oursFirst ? 'applied' : 'unknown',
          });
        }),
        { numRuns: 100 },
      );
    },
    PROPERTY_TIMEOUT_MS,
  );

  it(
    'enrollment: applied exactly when ours landed, whatever the precision, tie-break and page size',
    async () => {
      const enrollmentScenario = fc.record({
        precision,
        tieBreak,
        pageSize,
        prior: fc.array(fc.record({ mine: fc.boolean(), active: fc.boolean() }), {
          minLength: 1,
          maxLength: 6,
        }),
        post: fc.array(fc.boolean(), { minLength: 0, maxLength: 5 }),
        ours: fc.boolean(),
      });
      await fc.assert(
        fc.asyncProperty(enrollmentScenario, async (s) => {
          await control.setConfig({ created_at_precision: s.precision, tie_break: s.tieBreak });
          const [customer] = await control.addRecords('customers', [{ email: `enr-${++seq}@example.com` }]);
          const mine = Number(customer!.id);
          const command = { enrollment_request_id: `enr-prop-${seq}`, customer_id: String(mine) };
          const other = () => 1_000_000 + ++seq;
          await control.addRecords(
            'enrollments',
            s.prior.map((p) => ({
              customer_id: p.mine ? mine : other(),
              status: p.active ? 'active' : 'ended',
            })),
          );
          const strategy = enrollmentReadBack(paged(s.pageSize));
          const snapshot = await strategy.snapshot(command, ctx);
          // A customer's second active enrollment is refused: ours lands only when none is active.
          const lands = s.ours && !s.prior.some((p) => p.mine && p.active);
          const post = s.post.map(() => ({ customer_id: other(), status: 'active' }));
          if (lands) post.splice(Math.floor(post.length / 2), 0, { customer_id: mine, status: 'active' });
          if (post.length > 0) await control.addRecords('enrollments', post);
          const verdict = await strategy.verdict(command, snapshot, ctx);
          expect({ scenario: s, verdict }).toEqual({
            scenario: s,
            verdict: lands ? 'applied' : 'not_applied',
          });
        }),
        { numRuns: 100 },
      );
    },
    PROPERTY_TIMEOUT_MS,
  );
});
