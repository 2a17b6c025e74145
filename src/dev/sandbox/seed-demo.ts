import type { RecordStore, SandboxRecord } from './record-store.js';

/** mulberry32: a tiny seeded PRNG, so the demo data set is the same on every start. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Timestamps are spread over the 180 days before this fixed instant (not "now": deterministic). */
const ANCHOR = Date.UTC(2026, 0, 1);
const DAY_MS = 86_400_000;

const FIRST = [
  'Ada',
  'Ben',
  'Cleo',
  'Dev',
  'Elif',
  'Femi',
  'Gus',
  'Hana',
  'Ivo',
  'Jia',
  'Kofi',
  'Lena',
  'Mo',
  'Nia',
];
const LAST = [
  'Okafor',
  'Petrov',
  'Quinn',
  'Rossi',
  'Sato',
  'Tan',
  'Umar',
  'Vega',
  'Wong',
  'Xu',
  'Yilmaz',
  'Zed',
];
const STREETS = ['Elm', 'Oak', 'Birch', 'Cedar', 'Maple', 'Willow', 'Ash', 'Pine'];
const CITIES = ['Austin', 'Denver', 'Columbus', 'Raleigh', 'Tucson', 'Omaha'];

/** How many records of each collection the demo holds (3,875 in all). */
export const DEMO_COUNTS = {
  properties: 40,
  units: 600,
  customers: 800,
  enrollments: 500,
  applications: 700,
  application_activity_logs: 400,
  listings: 120,
  leads: 300,
  roles: 6,
  users: 25,
  magic_links: 40,
  bank_accounts: 4,
  billing_statements: 60,
  billing_activities: 180,
  customer_issues: 100,
} as const;

/**
 * `--seed demo`: a realistic, deterministic data set. Properties belong to five owners and ten
 * property groups; units, customers, enrollments, applications and leads inherit them, so
 * scoped keys have something to see.
 */
export function seedDemo(store: RecordStore): void {
  const g = demoRandom(20_260_101);
  const { properties, units } = seedPlaces(store, g);
  const { customers, applications } = seedPeople(store, g, units);
  seedActivity(store, g, { properties, units, customers, applications });
  seedAccounts(store, g, customers);
}

type Seeded = SandboxRecord;
type DemoRandom = ReturnType<typeof demoRandom>;

/** The seeded draws every part takes from, in one order (the data set depends on it). */
function demoRandom(seed: number) {
  const random = prng(seed);
  const int = (n: number) => Math.floor(random() * n);
  const pick = <T>(items: readonly T[]): T => items[int(items.length)] as T;
  const at = (maxDaysAgo = 180) => new Date(ANCHOR - int(maxDaysAgo * DAY_MS)).toISOString();
  const stamps = () => {
    const created = at();
    const updated = new Date(Math.min(ANCHOR, Date.parse(created) + int(30 * DAY_MS))).toISOString();
    return { created_at: created, updated_at: updated };
  };
  const pad = (n: number, width = 2) => String(n).padStart(width, '0');
  return { random, int, pick, at, stamps, pad };
}

/** Properties and their units. */
function seedPlaces(store: RecordStore, { int, pick, stamps, pad }: DemoRandom) {
  const properties = Array.from({ length: DEMO_COUNTS.properties }, (_, i) =>
    store.collection('properties').insert({
      name: `${pick(STREETS)} ${pick(['Court', 'Gardens', 'Commons', 'Lofts'])} ${i + 1}`,
      address: `${100 + int(900)} ${pick(STREETS)} St, ${pick(CITIES)}`,
      owner_id: (i % 5) + 1,
      property_group_id: (i % 10) + 1,
      ...stamps(),
    }),
  );

  const units = Array.from({ length: DEMO_COUNTS.units }, () => {
    const property = pick(properties);
    return store.collection('units').insert({
      property_id: property.id,
      title: `${pick(['A', 'B', 'C', 'D'])}-${pad(1 + int(40), 3)}`,
      bedrooms: 1 + int(4),
      rent_cents: 90_000 + int(200) * 1000,
      owner_id: property.owner_id,
      property_group_id: property.property_group_id,
      ...stamps(),
    });
  });

  return { properties, units };
}

/** Customers, their enrollments (with payments) and applications. */
function seedPeople(store: RecordStore, { random, int, pick, stamps, pad }: DemoRandom, units: Seeded[]) {
  const customers = Array.from({ length: DEMO_COUNTS.customers }, (_, i) => {
    const unit = pick(units);
    const first = pick(FIRST);
    const last = pick(LAST);
    return store.collection('customers').insert({
      first_name: first,
      last_name: last,
      email: `${first}.${last}.${i + 1}@example.com`.toLowerCase(),
      phone: `555${pad(int(10_000_000), 7)}`,
      unit_id: unit.id,
      owner_id: unit.owner_id,
      property_group_id: unit.property_group_id,
      ...stamps(),
    });
  });

  // One enrollment per customer at most: the first 500 customers, 90 % active.
  customers.slice(0, DEMO_COUNTS.enrollments).forEach((customer) => {
    const active = random() < 0.9;
    const months = active ? int(7) : 0;
    const rental_payments = Array.from({ length: months }, (_, m) => ({
      id: `rp_demo_${customer.id}_${m + 1}`,
      amount_cents: 100_000 + int(150) * 1000,
      paid_on: `2025-${pad(6 + m)}-${pad(1 + int(5))}`,
      period: `2025-${pad(6 + m)}`,
      reported_at: new Date(Date.UTC(2025, 5 + m, 10)).toISOString(),
    }));
    store.collection('enrollments').insert({
      customer_id: customer.id,
      status: active ? 'active' : 'ended',
      rental_payments,
      owner_id: customer.owner_id,
      property_group_id: customer.property_group_id,
      ...stamps(),
    });
  });

  const STATES = ['submitted', 'submitted', 'in_review', 'in_review', 'approved', 'declined'] as const;
  const applications = Array.from({ length: DEMO_COUNTS.applications }, () => {
    const unit = pick(units);
    const status = pick(STATES);
    return store.collection('applications').insert({
      customer_id: pick(customers).id,
      unit_id: unit.id,
      status,
      owner_id: unit.owner_id,
      property_group_id: unit.property_group_id,
      ...stamps(),
    });
  });

  return { customers, applications };
}

/** Activity logs, listings, leads, roles, users and magic links. */
function seedActivity(
  store: RecordStore,
  { int, pick, at, stamps, pad }: DemoRandom,
  seeded: { properties: Seeded[]; units: Seeded[]; customers: Seeded[]; applications: Seeded[] },
) {
  const { properties, units, customers, applications } = seeded;
  for (let i = 0; i < DEMO_COUNTS.application_activity_logs; i++) {
    const application = pick(applications);
    const t = at();
    store.collection('application_activity_logs').insert({
      application_id: application.id,
      action: pick(['submitted', 'viewed', 'document_uploaded', 'status_changed']),
      owner_id: application.owner_id,
      property_group_id: application.property_group_id,
      created_at: t,
      updated_at: t,
    });
  }

  for (let i = 0; i < DEMO_COUNTS.listings; i++) {
    const unit = pick(units);
    store.collection('listings').insert({
      unit_id: unit.id,
      headline: `${String(unit.bedrooms)} bed in ${pick(CITIES)}`,
      rent_cents: unit.rent_cents,
      owner_id: unit.owner_id,
      property_group_id: unit.property_group_id,
      ...stamps(),
    });
  }

  for (let i = 0; i < DEMO_COUNTS.leads; i++) {
    const property = pick(properties);
    store.collection('leads').insert({
      property_id: property.id,
      name: `${pick(FIRST)} ${pick(LAST)}`,
      source: pick(['website', 'referral', 'walk_in', 'listing_site']),
      owner_id: property.owner_id,
      property_group_id: property.property_group_id,
      ...stamps(),
    });
  }

  for (const name of ['admin', 'leasing_agent', 'maintenance', 'owner', 'property_manager', 'viewer']) {
    store.collection('roles').insert({ name, ...stamps() });
  }

  for (let i = 0; i < DEMO_COUNTS.users; i++) {
    const first = pick(FIRST);
    store.collection('users').insert({
      name: `${first} ${pick(LAST)}`,
      email: `${first.toLowerCase()}.staff${i + 1}@example.com`,
      role: pick(['admin', 'leasing_agent', 'property_manager', 'viewer']),
      ...stamps(),
    });
  }

  for (let i = 0; i < DEMO_COUNTS.magic_links; i++) {
    const customer = pick(customers);
    store.collection('magic_links').insert({
      customer_id: customer.id,
      url: `https://portal.example.com/m/${pad(int(1e9), 9)}`,
      expires_at: new Date(ANCHOR + int(14) * DAY_MS).toISOString(),
      owner_id: customer.owner_id,
      property_group_id: customer.property_group_id,
      ...stamps(),
    });
  }
}

/** Bank accounts, billing and customer issues. */
function seedAccounts(store: RecordStore, { int, pick, stamps, pad }: DemoRandom, customers: Seeded[]) {
  for (let i = 0; i < DEMO_COUNTS.bank_accounts; i++) {
    store.collection('bank_accounts').insert({
      bank_name: pick(['First Demo Bank', 'Sandbox Credit Union', 'Example Savings']),
      account_last4: pad(int(10_000), 4),
      routing_number: `0${pad(int(1e8), 8)}`,
      ...stamps(),
    });
  }

  for (let i = 0; i < DEMO_COUNTS.billing_statements; i++) {
    store.collection('billing_statements').insert({
      period: `2025-${pad(1 + (i % 12))}`,
      amount_cents: 50_000 + int(500) * 100,
      status: pick(['paid', 'open']),
      ...stamps(),
    });
  }

  for (let i = 0; i < DEMO_COUNTS.billing_activities; i++) {
    store.collection('billing_activities').insert({
      kind: pick(['charge', 'credit', 'payment']),
      amount_cents: 1000 + int(10_000) * 10,
      ...stamps(),
    });
  }

  for (let i = 0; i < DEMO_COUNTS.customer_issues; i++) {
    const customer = pick(customers);
    store.collection('customer_issues').insert({
      customer_id: customer.id,
      kind: pick(['missing_payment', 'identity_mismatch', 'disputed_tradeline']),
      status: pick(['open', 'resolved']),
      ...stamps(),
    });
  }
}
