import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { customerRegistrationReadBack } from '../../src/command-types/customer-registrations/customer-registration-read-back.js';
import { enrollmentReadBack } from '../../src/command-types/enrollments/enrollment-read-back.js';
import type { ReadContext } from '../../src/guard/read-backs/read-back.js';
import { createSnapshotStore, type SnapshotStore } from '../../src/guard/read-backs/snapshot-store.js';
import { CREATE_CUSTOMER_PATH } from '../../src/partner/assumptions.js';
import type { PartnerClient } from '../../src/partner/index.js';
import type { SandboxControl } from '../../src/dev/sandbox/control-client.js';
import type { Sandbox } from '../../src/dev/sandbox/index.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { startSandboxPartner } from '../support/sandbox.js';
import { buildRegistration } from '../receiver/webhooks.js';

// Issue 43 item 2: Partner requests per onboarding command (customers newest first, enrollments
// newest first by id), counted at the client's fetch, on the sandbox. The snapshot's page 1 comes
// from the latest stored read of it while young enough (src/guard/read-backs/snapshot-first-page.ts).
let sandbox: Sandbox;
let control: SandboxControl;
let database: TestDatabase;
let partner: PartnerClient;
const counted = { reads: 0, writes: 0 };

const ctx: ReadContext = { nextReadId: () => `rb-${Math.random().toString(36).slice(2)}` };
const tick = () => new Promise((r) => setTimeout(r, 5));

beforeAll(async () => {
  let started: Awaited<ReturnType<typeof startSandboxPartner>>;
  [started, database] = await Promise.all([
    startSandboxPartner({
      onRequest: (url, method) => {
        if (url.pathname === '/partner/v1/customers' || url.pathname === '/partner/v1/enrollments') {
          if (method === 'GET') counted.reads++;
          else counted.writes++;
        } else if (url.pathname === CREATE_CUSTOMER_PATH) counted.writes++;
      },
    }),
    createTestDatabase(),
  ]);
  ({ sandbox, control, partner } = started);
});
afterAll(async () => {
  await sandbox?.close();
  await database?.drop();
});

async function reset(): Promise<void> {
  await control.reset();
  // The rate limit is not what these tests measure.
  await control.setConfig({ rate_limit_per_minute: 100_000 });
  counted.reads = counted.writes = 0;
}

function store(maxAgeMs: number, keyId = `key-${Math.random()}`): SnapshotStore {
  return createSnapshotStore({ db: database.db, keyId, maxAgeMs });
}

const asCustomer = ({ first_name, last_name, email, phone }: ReturnType<typeof buildRegistration>) => ({
  first_name,
  last_name,
  email,
  phone,
});

async function customers(n: number): Promise<void> {
  for (let i = 0; i < n; i += 1000)
    await control.addRecords(
      'customers',
      Array.from({ length: Math.min(1000, n - i) }, () => asCustomer(buildRegistration())),
    );
}

describe('Partner requests per onboarding command', () => {
  it('a burst of 200 registrations over 3,000 customers costs at most 1.05 requests each, each customer created once', async () => {
    await reset();
    await customers(3000);
    const strategy = customerRegistrationReadBack(partner, { snapshotStore: store(600_000) });
    const burst = Array.from({ length: 200 }, () => buildRegistration());
    counted.reads = counted.writes = 0;
    let next = 0;
    await Promise.all(
      Array.from({ length: 20 }, async () => {
        while (next < burst.length) {
          const command = burst[next++]!;
          await strategy.snapshot(command as never, ctx);
          await strategy.write(command as never, `rb-w-${command.registration_id}`);
        }
      }),
    );
    expect(counted.writes).toBe(burst.length);
    expect((counted.reads + counted.writes) / burst.length).toBeLessThanOrEqual(1.05);
    const emails = (await control.records('customers')).map((c) => String(c.email));
    for (const command of burst) expect(emails.filter((e) => e === command.email)).toHaveLength(1);
  }, 120_000);

  it('a stored page 1 older than SNAPSHOT_MAX_AGE_MS is refused and page 1 read again', async () => {
    await reset();
    await customers(10);
    const keyId = 'old-first-page';
    await customerRegistrationReadBack(partner, { snapshotStore: store(300, keyId) }).snapshot(
      buildRegistration() as never,
      ctx,
    );
    const young = customerRegistrationReadBack(partner, { snapshotStore: store(300, keyId) });
    counted.reads = 0;
    await young.snapshot(buildRegistration() as never, ctx);
    expect(counted.reads).toBe(0);
    await new Promise((r) => setTimeout(r, 400));
    const refusedAt = Date.now();
    const snapshot = await young.snapshot(buildRegistration() as never, ctx);
    expect(counted.reads).toBe(1);
    expect(Date.parse(snapshot.taken_at)).toBeGreaterThanOrEqual(refusedAt);
  });

  describe('on a stored page 1 with customers created by another system since', () => {
    it('an ambiguous registration that landed reads back applied', async () => {
      await reset();
      await customers(5);
      const keyId = 'landed';
      const command = buildRegistration();
      await customerRegistrationReadBack(partner, { snapshotStore: store(600_000, keyId) }).snapshot(
        buildRegistration() as never,
        ctx,
      );
      await tick();
      await customers(3);
      const strategy = customerRegistrationReadBack(partner, { snapshotStore: store(600_000, keyId) });
      counted.reads = 0;
      const snapshot = await strategy.snapshot(command as never, ctx);
      expect(counted.reads).toBe(0);
      await control.addFault({
        method: 'POST',
        path: CREATE_CUSTOMER_PATH,
        kind: 'apply_then_error',
        status: 500,
        times: 1,
      });
      await strategy.write(command as never, 'rb-w-landed').catch(() => undefined);
      expect(await strategy.verdict(command as never, snapshot, ctx)).toBe('applied');
    });

    it('one that did not land reads back not_applied, and one by another system with the e-mail unknown', async () => {
      await reset();
      await customers(5);
      const keyId = 'not-landed';
      const strategy = customerRegistrationReadBack(partner, { snapshotStore: store(600_000, keyId) });
      await strategy.snapshot(buildRegistration() as never, ctx);
      await tick();
      await customers(3);
      const command = buildRegistration();
      const snapshot = await strategy.snapshot(command as never, ctx);
      await control.addFault({
        method: 'POST',
        path: CREATE_CUSTOMER_PATH,
        kind: 'error',
        status: 500,
        times: 1,
      });
      await strategy.write(command as never, 'rb-w-lost').catch(() => undefined);
      expect(await strategy.verdict(command as never, snapshot, ctx)).toBe('not_applied');
      // Another system registers the e-mail with other details after the stored read: not ours.
      await control.addRecords('customers', [asCustomer({ ...command, first_name: 'Grace' })]);
      expect(await strategy.verdict(command as never, snapshot, ctx)).toBe('unknown');
    });
  });

  describe('when our own earlier command for the same target wrote after the stored read', () => {
    // The chaos run of stop 46: a customer's second enrollment request, refused because the first
    // one's enrollment is active, read back against a page 1 stored before the first one's write,
    // took that enrollment for its own and ended `applied` with no write on the ledger.
    it('reads page 1 again, and a refused second enrollment is not taken for applied', async () => {
      await reset();
      const [person] = await control.addRecords('customers', [asCustomer(buildRegistration())]);
      const keyId = 'own-earlier-write';
      const strategy = enrollmentReadBack(partner, { snapshotStore: store(600_000, keyId) });
      const first = { enrollment_request_id: 'enr-first', customer_id: String(person!.id) };
      const second = { enrollment_request_id: 'enr-second', customer_id: String(person!.id) };
      // Another PMS source acting with its own key has a stored page 1 too.
      const otherKey = enrollmentReadBack(partner, { snapshotStore: store(600_000, `${keyId}-other`) });
      await otherKey.snapshot(first as never, ctx);
      await strategy.snapshot(first as never, ctx);
      await tick();
      await strategy.write(first as never, 'rb-w-first');

      counted.reads = 0;
      await otherKey.snapshot(second as never, ctx);
      expect(counted.reads).toBe(1);
      counted.reads = 0;
      const snapshot = await strategy.snapshot(second as never, ctx);
      expect(counted.reads).toBe(1);
      expect(snapshot.existing_enrollment_id).not.toBeNull();
      await control.addFault({
        method: 'POST',
        path: '/partner/v1/enrollments',
        kind: 'error',
        status: 503,
        times: 1,
      });
      await expect(strategy.write(second as never, 'rb-w-second')).rejects.toThrow();
      expect(await strategy.verdict(second as never, snapshot, ctx)).toBe('not_applied');
    });

    it('a registration of an e-mail we registered since the stored read reads page 1 again', async () => {
      await reset();
      await customers(3);
      const keyId = 'own-earlier-registration';
      const strategy = customerRegistrationReadBack(partner, { snapshotStore: store(600_000, keyId) });
      const command = buildRegistration();
      await strategy.snapshot(buildRegistration() as never, ctx);
      await tick();
      await strategy.write(command as never, 'rb-w-reg-first');
      counted.reads = 0;
      const again = await strategy.snapshot({ ...command, registration_id: 'reg-again' } as never, ctx);
      expect(counted.reads).toBe(1);
      expect(again.existing_customer_id).not.toBeNull();
      // Another target's snapshot still rests on the stored page.
      counted.reads = 0;
      await strategy.snapshot(buildRegistration() as never, ctx);
      expect(counted.reads).toBe(0);
    });
  });

  it('enrollments: a burst of 100 over 2,000 enrollments costs at most 1.05 requests each', async () => {
    await reset();
    for (let i = 0; i < 2; i++)
      await control.addRecords(
        'enrollments',
        Array.from({ length: 1000 }, () => ({ status: 'active', rental_payments: [] })),
      );
    const people = await control.addRecords(
      'customers',
      Array.from({ length: 100 }, () => asCustomer(buildRegistration())),
    );
    const strategy = enrollmentReadBack(partner, { snapshotStore: store(600_000) });
    counted.reads = counted.writes = 0;
    let next = 0;
    await Promise.all(
      Array.from({ length: 10 }, async () => {
        while (next < people.length) {
          const command = { enrollment_request_id: `enr-${next}`, customer_id: String(people[next++]!.id) };
          await strategy.snapshot(command as never, ctx);
          await strategy.write(command as never, `rb-w-${command.enrollment_request_id}`);
        }
      }),
    );
    expect(counted.writes).toBe(people.length);
    expect((counted.reads + counted.writes) / people.length).toBeLessThanOrEqual(1.05);
  }, 120_000);
});
