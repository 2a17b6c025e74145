import type { LedgerEntry, WebhookDelivery } from '../../src/dev/sandbox/control-client.js';
import { commandKey, PRIMARY_SOURCE, type LoadState, type SentCommand } from './load-generator.js';
import type { ReadMessage } from './topic-reader.js';

/**
 * The promises the chaos run checks, from what it can see after the drain: what the load sent
 * and was told, every message on every topic of its broker, the guard's table, and the
 * sandbox's ledger (the ground truth of applied writes).
 */
export interface Evidence {
  load: LoadState;
  /** Logical topic → every message on it. */
  topics: Map<string, ReadMessage[]>;
  /** The commands table: command_id → state. */
  commandStates: Map<string, string>;
  ledger: LedgerEntry[];
  deliveries: WebhookDelivery[];
  /** The sandbox's customers after the drain (id, email): whom each registration outcome names. */
  customers?: Array<{ id: number | string; email?: unknown }>;
  /**
   * Request ids of writes rentbridge saw refused with 404 or 403 (command_attempts). The sandbox's
   * ledger also holds refusals whose answer never reached it (its time-out came first), after
   * which writing again is the guard's rule, not a breach.
   */
  refusalsSeen?: Set<string>;
}

export interface Check {
  name: string;
  ok: boolean;
  /** How many things were checked. */
  checked: number;
  /** Up to 10 examples of what failed, precise enough to look up. */
  failures: string[];
  failureCount: number;
}

export const FINAL_STATES = new Set(['applied', 'already_applied', 'rejected', 'exhausted', 'unverified']);
const COMMAND_TOPICS = [
  'commands.rental-payments',
  'commands.application-decisions',
  'commands.customer-registrations',
  'commands.enrollments',
] as const;
const OUTCOME_TOPIC: Record<string, string> = {
  'commands.rental-payments': 'outcomes.rental-payments',
  'commands.application-decisions': 'outcomes.application-decisions',
  'commands.customer-registrations': 'outcomes.customer-registrations',
  'commands.enrollments': 'outcomes.enrollments',
};

/** The command id a command's data carries, whatever its kind. */
function commandIdIn(data: Record<string, unknown> | undefined): string | undefined {
  const id = data?.payment_id ?? data?.decision_id ?? data?.registration_id ?? data?.enrollment_request_id;
  return typeof id === 'string' ? id : undefined;
}

interface ParsedEvent {
  id: string;
  type: string;
  /** The CloudEvent source: of a PMS command, `/webhooks/pms/<source>`. */
  source: string;
  data: Record<string, unknown>;
  message: ReadMessage;
}

/** The run's key of a command message: its id, with its PMS source when not the primary one. */
function keyOfCommandEvent(e: ParsedEvent): string | undefined {
  const id = commandIdIn(e.data);
  const source = /^\/webhooks\/pms\/(.+)$/.exec(e.source)?.[1] ?? PRIMARY_SOURCE;
  return id === undefined ? undefined : commandKey(source, id);
}

function parse(message: ReadMessage): ParsedEvent | null {
  try {
    const e = JSON.parse(message.value) as { id?: unknown; type?: unknown; source?: unknown; data?: unknown };
    if (typeof e.id !== 'string' || typeof e.type !== 'string') return null;
    const data = e.data !== null && typeof e.data === 'object' ? (e.data as Record<string, unknown>) : {};
    return { id: e.id, type: e.type, source: typeof e.source === 'string' ? e.source : '', data, message };
  } catch {
    return null;
  }
}

function check(name: string): Check & { fail(detail: string): void; count(n?: number): void } {
  const c = {
    name,
    ok: true,
    checked: 0,
    failures: [] as string[],
    failureCount: 0,
    fail(detail: string) {
      c.ok = false;
      c.failureCount += 1;
      if (c.failures.length < 10) c.failures.push(detail);
    },
    count(n = 1) {
      c.checked += n;
    },
  };
  return c;
}

/**
 * The key of the command a ledger write belongs to, by its body first (unique amounts, e-mails,
 * the command's key in a decision's reason), else its request id (`<command id>.a<n>`): a command
 * whose id another source's command shares may carry the plain id or an encoded one, whichever
 * came first; one no other source uses carries its plain id, whatever its source.
 */
export function attributeWrite(write: LedgerEntry, commands: Map<string, SentCommand>): string | null {
  const fromRequestId = write.request_id?.replace(/\.a\d+(\.r\d+)?$/, '');
  const key = (c: SentCommand) => c.key;
  const body = (write.body ?? {}) as {
    reason?: unknown;
    rental_payments?: Array<{ amount_cents?: unknown }>;
    email?: unknown;
  };
  if (typeof body.email === 'string') {
    for (const c of commands.values()) if (c.email === body.email) return key(c);
  }
  if (typeof body.reason === 'string' && body.reason.startsWith('chaos ')) {
    const id = body.reason.slice('chaos '.length);
    if (commands.has(id)) return id;
  }
  const amount = body.rental_payments?.[0]?.amount_cents;
  if (typeof amount === 'number') {
    for (const c of commands.values()) if (c.amountCents === amount) return key(c);
  }
  if (fromRequestId) {
    if (commands.has(fromRequestId)) return fromRequestId;
    const same = [...commands.values()].filter((c) => c.commandId === fromRequestId);
    if (same.length === 1) return key(same[0]!);
  }
  return null;
}

export function isWritePath(path: string): boolean {
  return (
    /^\/partner\/v1\/(enrollments\/[^/]+\/report_rental_payments|applications\/[^/]+\/(approve|decline))$/.test(
      path,
    ) ||
    path === '/v1/partners/customers' ||
    path === '/partner/v1/enrollments'
  );
}

export interface Analysis {
  checks: Check[];
  /** Derived sets the figures use. */
  publishedCommandIds: Set<string>;
  ackedCommandIds: Set<string>;
  appliedByLedger: Map<string, number>;
  parkedReasons: Map<string, Set<string>>;
  events: Map<string, ParsedEvent[]>;
  unparseable: number;
}

export function analyse(evidence: Evidence): Analysis {
  const { load, topics } = evidence;
  const events = new Map<string, ParsedEvent[]>();
  let unparseable = 0;
  for (const [topic, messages] of topics) {
    const parsed: ParsedEvent[] = [];
    for (const m of messages) {
      const e = parse(m);
      if (e) parsed.push(e);
      else unparseable += 1;
    }
    events.set(topic, parsed);
  }
  const on = (topic: string) => events.get(topic) ?? [];
  const checks: Check[] = [];

  // 1. Every webhook the receiver acknowledged was published (found by its webhook-id header,
  //    which the receiver sets on every event it writes).
  const byWebhookId = new Map<string, ParsedEvent[]>();
  for (const [topic, list] of events) {
    if (topic.endsWith('.dlq') || topic.startsWith('outcomes.')) continue;
    for (const e of list) {
      const wid = e.message.headers['webhook-id'];
      // A follow-up a consumer derived (a registration's enrollment: `caused-by`) keeps its
      // webhook's trail for tracing; it is not what the receiver published for that webhook.
      if (!wid || e.message.headers['caused-by']) continue;
      const arr = byWebhookId.get(wid) ?? [];
      arr.push(e);
      byWebhookId.set(wid, arr);
    }
  }
  const acked = check('every acknowledged PMS webhook was published');
  const ackedCommandIds = new Set<string>();
  for (const hook of load.webhooks) {
    if (hook.ackAt === undefined) continue;
    acked.count();
    const hookKey = hook.commandKey ?? hook.commandId;
    if (hookKey) ackedCommandIds.add(hookKey);
    const found = byWebhookId.get(hook.webhookId) ?? [];
    const expectedTopic = hookKey ? load.commands.get(hookKey)?.topic : 'inbound.unrouted';
    const ok = found.some(
      (e) =>
        e.message.topic.endsWith(expectedTopic ?? '') &&
        (hook.commandId
          ? commandIdIn(e.data) === hook.commandId
          : hook.marker !== undefined && e.message.value.includes(hook.marker)),
    );
    if (!ok)
      acked.fail(
        `webhook ${hook.webhookId} (${hook.kind}${hook.commandId ? `, command ${hook.commandId}` : ''}) answered 2xx at ${new Date(hook.ackAt).toISOString()}, not on ${expectedTopic}`,
      );
  }
  checks.push(acked);

  // 2. The sandbox's own webhooks (record changes) that the receiver acknowledged were published
  //    as state changes: the version (record id, updated_at) is on partner.<resource>.
  const versions = new Set<string>();
  for (const [topic, list] of events) {
    if (!topic.startsWith('partner.')) continue;
    for (const e of list) {
      const singular = /^partner\.([a-z_]+)\.(updated|removed)$/.exec(e.type)?.[1];
      versions.add(`${singular}|${String(e.data.id)}|${String(e.data.updated_at)}`);
    }
  }
  const partnerAcked = check('every acknowledged sandbox webhook (record change) was published');
  for (const d of evidence.deliveries) {
    if (!d.attempts.some((a) => a.status !== null && a.status >= 200 && a.status < 300)) continue;
    partnerAcked.count();
    const record = (d.payload.data ?? {}) as Record<string, unknown>;
    const singular = d.type.replace(/\.(updated|deleted)$/, '');
    const key = `${singular}|${String(record.id)}|${String(record.updated_at)}`;
    if (!versions.has(key))
      partnerAcked.fail(
        `delivery ${d.id} (${d.type} id ${String(record.id)} updated_at ${String(record.updated_at)}) acknowledged, not on partner.*`,
      );
  }
  checks.push(partnerAcked);

  // 3. Each CloudEvent id stands for one event: repeats (at-least-once) carry the same type, key
  //    and data, and one webhook never became two events.
  const sameId = check('a repeated CloudEvent id always carries the same event');
  for (const [topic, list] of events) {
    const seen = new Map<string, string>();
    for (const e of list) {
      sameId.count();
      const fingerprint = JSON.stringify([e.type, e.message.key, e.data]);
      const before = seen.get(e.id);
      if (before === undefined) seen.set(e.id, fingerprint);
      else if (before !== fingerprint)
        sameId.fail(`${topic}: id ${e.id} at offset ${e.message.offset} differs from its first copy`);
    }
  }
  checks.push(sameId);
  const oneEvent = check('one webhook became at most one event (distinct CloudEvent ids per webhook-id)');
  for (const [wid, list] of byWebhookId) {
    oneEvent.count();
    const ids = new Set(list.map((e) => e.id));
    if (ids.size > 1) oneEvent.fail(`webhook ${wid} became ${ids.size} events: ${[...ids].join(', ')}`);
  }
  checks.push(oneEvent);

  // 4. Every command in the system reached a final state, with an outcome that says the same.
  const publishedCommandIds = new Set<string>();
  for (const topic of COMMAND_TOPICS) {
    for (const e of on(topic)) {
      const key = keyOfCommandEvent(e);
      if (key) publishedCommandIds.add(key);
    }
  }
  // Every outcome names its source (issue 35): the key of the command it is about.
  const outcomes = new Map<string, Set<string>>();
  const outcomeTargets = new Map<string, Set<string>>();
  for (const topic of Object.values(OUTCOME_TOPIC)) {
    for (const e of on(topic)) {
      const id = e.data.command_id;
      if (typeof id !== 'string') continue;
      const key = commandKey(String(e.data.command_source ?? PRIMARY_SOURCE), id);
      const set = outcomes.get(key) ?? new Set<string>();
      set.add(String(e.data.status));
      outcomes.set(key, set);
      const targets = outcomeTargets.get(key) ?? new Set<string>();
      targets.add(String(e.data.target_id).toLowerCase());
      outcomeTargets.set(key, targets);
    }
  }
  const inSystem = new Set([...ackedCommandIds, ...publishedCommandIds]);
  const final = check('every command reached a final state, and its outcome says so');
  for (const id of inSystem) {
    final.count();
    const state = evidence.commandStates.get(id);
    const statuses = outcomes.get(id);
    if (!state) final.fail(`command ${id}: no row in commands`);
    else if (!FINAL_STATES.has(state)) final.fail(`command ${id}: state ${state}`);
    else if (!statuses) final.fail(`command ${id}: ${state} but no outcome published`);
    else if (statuses.size > 1 || !statuses.has(state))
      final.fail(`command ${id}: state ${state}, outcomes say ${[...statuses].join(' and ')}`);
  }
  checks.push(final);

  // 5. Applied at most once, by the ledger; and the guard's verdict agrees with the ledger.
  const appliedByLedger = new Map<string, number>();
  const perApplication = new Map<string, number>();
  const once = check('each command applied at most once (sandbox ledger)');
  for (const w of evidence.ledger) {
    if (w.method !== 'POST' || !isWritePath(w.path) || !w.applied) continue;
    once.count();
    const id = attributeWrite(w, load.commands);
    if (!id) {
      once.fail(`applied write ${w.request_id} ${w.path} at ${w.at} belongs to no command the run sent`);
      continue;
    }
    appliedByLedger.set(id, (appliedByLedger.get(id) ?? 0) + 1);
    if (w.path.includes('/applications/'))
      perApplication.set(w.path.split('/')[4]!, (perApplication.get(w.path.split('/')[4]!) ?? 0) + 1);
  }
  for (const [id, n] of appliedByLedger) {
    if (n > 1) {
      const writes = evidence.ledger.filter((w) => w.applied && attributeWrite(w, load.commands) === id);
      once.fail(
        `command ${id} applied ${n} times: ${writes.map((w) => `${w.request_id} ${w.status ?? 'no answer'} at ${w.at}`).join('; ')}`,
      );
    }
  }
  for (const [app, n] of perApplication) if (n > 1) once.fail(`application ${app} decided ${n} times`);
  // Onboarding: one customer per e-mail, one enrollment per customer, by the ledger's own bodies.
  const perEmail = new Map<string, number>();
  const perCustomer = new Map<string, number>();
  for (const w of evidence.ledger) {
    if (w.method !== 'POST' || !w.applied) continue;
    const body = (w.body ?? {}) as { email?: unknown; customer_id?: unknown };
    if (w.path === '/v1/partners/customers' && typeof body.email === 'string')
      perEmail.set(body.email, (perEmail.get(body.email) ?? 0) + 1);
    if (w.path === '/partner/v1/enrollments' && body.customer_id != null)
      perCustomer.set(String(body.customer_id), (perCustomer.get(String(body.customer_id)) ?? 0) + 1);
  }
  for (const [email, n] of perEmail) if (n > 1) once.fail(`customer ${email} created ${n} times`);
  for (const [customer, n] of perCustomer) if (n > 1) once.fail(`customer ${customer} enrolled ${n} times`);
  checks.push(once);

  const agrees = check("the guard's verdict agrees with the ledger");
  for (const id of inSystem) {
    const state = evidence.commandStates.get(id);
    if (!state || !FINAL_STATES.has(state)) continue;
    agrees.count();
    const n = appliedByLedger.get(id) ?? 0;
    if (state === 'applied' && n !== 1)
      agrees.fail(`command ${id}: applied, but the ledger shows ${n} applied writes`);
    if ((state === 'rejected' || state === 'exhausted') && n !== 0)
      agrees.fail(`command ${id}: ${state} (not applied), but the ledger shows ${n} applied write(s)`);
  }
  checks.push(agrees);

  // 5c. Two sources, one id (issue 35): two commands, each applied at most once, each outcome
  //     naming its own target; a command never taken for the other.
  const apart = check('commands that share an id across sources are kept apart (ledger and outcomes)');
  for (const c of load.commands.values()) {
    if (!c.collidesWith) continue;
    for (const [key, command] of [
      [c.key!, c],
      [c.collidesWith, load.commands.get(c.collidesWith)],
    ] as const) {
      if (!command || !inSystem.has(key)) continue;
      apart.count();
      const targets = outcomeTargets.get(key);
      if (targets && [...targets].some((t) => t !== command.targetId.toLowerCase()))
        apart.fail(
          `command ${key}: outcome names target(s) ${[...targets].join(', ')}, its own is ${command.targetId}`,
        );
      const state = evidence.commandStates.get(key);
      const n = appliedByLedger.get(key) ?? 0;
      if (state === 'applied' && n !== 1) apart.fail(`command ${key}: applied, ledger shows ${n} writes`);
    }
  }
  checks.push(apart);

  // 5b. Onboarding outcomes agree with the ledger (issue 30): one customer per e-mail; an applied
  // registration names the customer the ledger shows it created, a rejected one names someone
  // else's, never the customer its own write created.
  const onboarding = check('registration outcomes name the right customer (sandbox ledger)');
  const byEmail = new Map<string, Array<string>>();
  for (const c of evidence.customers ?? []) {
    if (typeof c.email !== 'string') continue;
    const key = c.email.toLowerCase();
    byEmail.set(key, [...(byEmail.get(key) ?? []), String(c.id)]);
  }
  for (const [email, ids] of byEmail)
    if (ids.length > 1) onboarding.fail(`e-mail ${email}: customers ${ids.join(', ')}`);
  const createdBy = new Map<string, string>();
  for (const w of evidence.ledger) {
    const email = (w.body as { email?: unknown } | null)?.email;
    if (w.method !== 'POST' || w.path !== '/v1/partners/customers' || !w.applied || typeof email !== 'string')
      continue;
    const id = attributeWrite(w, load.commands);
    if (id) createdBy.set(id, email.toLowerCase());
  }
  if (evidence.customers) {
    for (const e of on('outcomes.customer-registrations')) {
      const bare = e.data.command_id;
      if (typeof bare !== 'string') continue;
      const id = commandKey(String(e.data.command_source ?? PRIMARY_SOURCE), bare);
      if (!load.commands.has(id)) continue;
      onboarding.count();
      const created = createdBy.get(id);
      const ours = created ? (byEmail.get(created) ?? [])[0] : undefined;
      const status = String(e.data.status);
      if (status === 'applied' || status === 'already_applied') {
        if (!ours)
          onboarding.fail(`registration ${id}: ${status}, but the ledger shows no customer it created`);
        else if (e.data.partner_customer_id !== ours)
          onboarding.fail(
            `registration ${id}: ${status} naming ${String(e.data.partner_customer_id)}, but it created ${ours}`,
          );
      } else if (status === 'rejected' && ours !== undefined) {
        onboarding.fail(
          `registration ${id}: rejected (naming ${String(e.data.existing_customer_id)}), but the ledger shows it created customer ${ours}`,
        );
      }
    }
  }
  checks.push(onboarding);

  // 6. What did not succeed is parked: a dead letter with a reason, on <topic>.dlq.
  const parkedReasons = new Map<string, Set<string>>();
  for (const topic of COMMAND_TOPICS) {
    for (const m of topics.get(`${topic}.dlq`) ?? []) {
      const reason = m.headers['dlq-reason'] ?? '';
      const parsed = parse(m);
      const bare = m.headers['dlq-command-id'] ?? commandIdIn(parsed?.data);
      if (!bare) continue;
      const source =
        m.headers['dlq-command-source'] ??
        (parsed ? /^\/webhooks\/pms\/(.+)$/.exec(parsed.source)?.[1] : undefined) ??
        PRIMARY_SOURCE;
      const id = commandKey(source, bare);
      const set = parkedReasons.get(id) ?? new Set<string>();
      set.add(reason);
      parkedReasons.set(id, set);
    }
  }
  const parked = check('every command not applied is in dead letters with a reason');
  for (const id of inSystem) {
    const state = evidence.commandStates.get(id);
    if (state !== 'rejected' && state !== 'exhausted' && state !== 'unverified') continue;
    parked.count();
    const reasons = parkedReasons.get(id);
    if (!reasons) parked.fail(`command ${id}: ${state}, no dead letter`);
    else if ([...reasons].every((r) => r === ''))
      parked.fail(`command ${id}: dead letter without dlq-reason`);
  }
  checks.push(parked);

  // 6b. A scoped source acts only within its scope (issue 34): its commands on records of another
  //     owner end rejected with a dead letter saying so, never applied, with no write after the
  //     refusal; none of its other commands is refused for scope.
  const scoped = check(
    "a scoped source's command outside its scope is rejected as such, never applied, never written again",
  );
  const scopeLetters = new Set<string>();
  for (const topic of COMMAND_TOPICS) {
    for (const m of topics.get(`${topic}.dlq`) ?? []) {
      const id = m.headers['dlq-command-id'];
      if (id && /outside the scope of source/.test(m.headers['dlq-error-message'] ?? ''))
        scopeLetters.add(commandKey(m.headers['dlq-command-source'] ?? PRIMARY_SOURCE, id));
    }
  }
  for (const id of inSystem) {
    const command = load.commands.get(id);
    if (!command) continue;
    const state = evidence.commandStates.get(id);
    if (command.outsideScope) {
      scoped.count();
      if (state !== 'rejected')
        scoped.fail(`command ${id} (${command.source}) outside its scope: ${state ?? 'no row'}`);
      if ((appliedByLedger.get(id) ?? 0) > 0) scoped.fail(`command ${id} outside its scope was applied`);
      if (!scopeLetters.has(id)) scoped.fail(`command ${id} outside its scope: no dead letter saying so`);
      // The refusal is final: no write attempt of the command after the 404 / 403 it received.
      const writes = evidence.ledger.filter(
        (w) => w.method === 'POST' && isWritePath(w.path) && attributeWrite(w, load.commands) === id,
      );
      const refusal = writes.findIndex(
        (w) => (w.status === 404 || w.status === 403) && (evidence.refusalsSeen?.has(w.request_id) ?? true),
      );
      if (refusal >= 0 && refusal < writes.length - 1)
        scoped.fail(
          `command ${id} outside its scope was written again after its ${writes[refusal]!.status}: ${writes
            .slice(refusal + 1)
            .map((w) => w.request_id)
            .join(', ')}`,
        );
    } else if (scopeLetters.has(id)) {
      scoped.fail(`command ${id} (${command.source}) inside its scope was refused as outside it`);
    }
  }
  checks.push(scoped);

  // 7. The receiver's dedupe: a replay of an acknowledged webhook is answered as a duplicate.
  const replays = check('a replayed acknowledged webhook is answered duplicate (nothing published)');
  for (const hook of load.webhooks) {
    if (hook.kind !== 'replay' || hook.ackAt === undefined) continue;
    replays.count();
    if (!hook.duplicate) replays.fail(`replay of ${hook.webhookId} answered 2xx without duplicate: true`);
  }
  checks.push(replays);

  // 8. A valid, signed webhook is never refused (a 4xx other than 429).
  const refused = check('no valid signed webhook refused with a 4xx');
  for (const hook of load.webhooks) {
    refused.count();
    if (hook.refused)
      refused.fail(
        `webhook ${hook.webhookId} (${hook.kind}) refused: ${hook.answers.map((a) => a.status).join(', ')}`,
      );
  }
  checks.push(refused);

  return {
    checks,
    publishedCommandIds,
    ackedCommandIds,
    appliedByLedger,
    parkedReasons,
    events,
    unparseable,
  };
}
