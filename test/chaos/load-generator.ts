import { randomUUID } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import type { Random } from './chaos-options.js';
import type { SandboxControl } from '../../src/dev/sandbox/control-client.js';

/**
 * The steady load of the chaos run: signed PMS webhooks (the commands), duplicates and replays of
 * them, unknown event types, and record changes in the sandbox (which the sandbox announces to
 * the receiver with its own webhooks). A webhook is retried like a real sender would (same
 * `webhook-id`, freshly signed) on network errors, 429 and 5xx; every answer is recorded.
 *
 * Several PMS sources send at once (issue 34): a source with a scoped Partner API key (`owner`)
 * decides and pays for records of its owner, registers and enrolls customers that land in its
 * scope, and now and then decides an application of another owner, which must end rejected as
 * outside its scope and never be applied.
 *
 * The second source numbers its payments on its own, so now and then it reuses an id the first
 * already sent (issue 35): a command is its source + type + id, here `commandKey`.
 */

export type WebhookKind =
  | 'payment'
  | 'decision'
  | 'conflicting_decision'
  | 'registration'
  | 'enrollment'
  | 'resent_command'
  | 'replay'
  | 'unrouted'
  | 'colliding_payment';

/** The run's PMS sources: `acme` on the deployment key, `beta` on a scoped key of its own. */
export const PRIMARY_SOURCE = 'acme';
export const SECOND_SOURCE = 'beta';

/** The run's key of a command: its id for the primary source, `<source>/<id>` for another. */
export function commandKey(source: string, commandId: string): string {
  return source === PRIMARY_SOURCE ? commandId : `${source}/${commandId}`;
}

/** A PMS source of the load: its name, its signing secret, and its key's owner when scoped. */
export interface LoadSource {
  name: string;
  secret: string;
  /** The `owner_id` its scoped key sees (spec 5.9); none: the deployment key, every record. */
  owner?: string;
}

export interface SentWebhook {
  webhookId: string;
  /** The PMS source that signed and sent it. */
  source: string;
  kind: WebhookKind;
  type: string;
  /** The command id (payment_id / decision_id) it carries, when it is a command. */
  commandId?: string;
  /** commandKey(source, commandId), when it is a command. */
  commandKey?: string;
  /** A unique string in the body of an unrouted event, to find it on inbound.unrouted. */
  marker?: string;
  body: string;
  /** Every answer: an HTTP status, or `network` for a refused/reset/timed-out request. */
  answers: Array<{ at: number; status: number | 'network' }>;
  ackAt?: number;
  duplicate?: boolean;
  /** True when a 4xx other than 429 ended the sending: the receiver refused a valid webhook. */
  refused?: boolean;
}

export interface SentCommand {
  commandId: string;
  /** The PMS source that sent it. */
  source: string;
  /** commandKey(source, commandId): its key in `LoadState.commands`. */
  key: string;
  /** A second source's payment that reuses a primary source's payment id: that command's key. */
  collidesWith?: string;
  /** Sent by a scoped source for a record outside its scope: must end rejected, never applied. */
  outsideScope?: boolean;
  kind: 'payment' | 'decision' | 'registration' | 'enrollment';
  /** enrollment_id, application_id, e-mail (registration) or customer id (enrollment) */
  targetId: string;
  topic:
    | 'commands.rental-payments'
    | 'commands.application-decisions'
    | 'commands.customer-registrations'
    | 'commands.enrollments';
  /** Registrations: the e-mail, unique per registration. */
  email?: string;
  /** Onboarding commands: the webhook type and data, to send them again. */
  type?: string;
  data?: Record<string, unknown>;
  /** An enrollment chained from this registration (not sent by the load: the consumer's). */
  viaRegistration?: string;
  amountCents?: number;
  decision?: 'approve' | 'decline';
  /** True when another command targets the same application with a different decision. */
  conflicting?: boolean;
  webhookIds: string[];
}

export interface RecordChange {
  resource: string;
  id: string;
  updatedAt: string | null;
  at: number;
  ok: boolean;
}

export interface LoadState {
  webhooks: SentWebhook[];
  commands: Map<string, SentCommand>;
  recordChanges: RecordChange[];
  controlErrors: number;
}

export interface LoadGenerator {
  state: LoadState;
  start(): void;
  /** Stops sending new events and waits for the ones in flight (with their retries). */
  stop(): Promise<void>;
}

const RETRY_DELAYS_MS = [500, 1000, 2000, 4000, 8000, 8000, 8000];

export function createLoadGenerator(options: {
  receiverUrl: string;
  sources: LoadSource[];
  rate: number;
  random: Random;
  sandbox: SandboxControl;
  /** Enrollments with their owner: a scoped source pays only for its owner's. */
  enrollments: Array<{ id: number; owner?: string }>;
  customerIds: number[];
  /** The owner of records made for sources without a scoped key. */
  defaultOwner: string;
}): LoadGenerator {
  const { random } = options;
  const signers = new Map(options.sources.map((s) => [s.name, new Webhook(s.secret)]));
  const ownerOf = (source: LoadSource) => source.owner ?? options.defaultOwner;
  const enrollmentsOf = (source: LoadSource) => {
    const mine = options.enrollments.filter((e) => !source.owner || e.owner === source.owner);
    return mine.map((e) => e.id);
  };
  const state: LoadState = { webhooks: [], commands: new Map(), recordChanges: [], controlErrors: 0 };
  const inFlight = new Set<Promise<void>>();
  const decided: SentCommand[] = [];
  let timer: NodeJS.Timeout | null = null;
  let seq = 0;
  let stopped = false;

  const post = async (hook: SentWebhook): Promise<void> => {
    for (let attempt = 0; ; attempt++) {
      const timestamp = new Date();
      let status: number | 'network';
      let duplicate = false;
      try {
        const res = await fetch(`${options.receiverUrl}/webhooks/pms/${hook.source}`, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'webhook-id': hook.webhookId,
            'webhook-timestamp': String(Math.floor(timestamp.getTime() / 1000)),
            'webhook-signature': signers.get(hook.source)!.sign(hook.webhookId, timestamp, hook.body),
          },
          body: hook.body,
          signal: AbortSignal.timeout(10_000),
        });
        status = res.status;
        const text = await res.text();
        if (res.ok) {
          try {
            duplicate = (JSON.parse(text) as { duplicate?: boolean }).duplicate === true;
          } catch {
            // a 2xx without a JSON body still acknowledges the event
          }
        }
      } catch {
        status = 'network';
      }
      hook.answers.push({ at: Date.now(), status });
      if (typeof status === 'number' && status >= 200 && status < 300) {
        hook.ackAt ??= Date.now();
        hook.duplicate = duplicate;
        return;
      }
      if (typeof status === 'number' && status >= 400 && status < 500 && status !== 429) {
        hook.refused = true;
        return;
      }
      const delay = RETRY_DELAYS_MS[attempt];
      if (delay === undefined) return;
      await new Promise((r) => setTimeout(r, delay));
    }
  };

  const send = (
    source: string,
    kind: WebhookKind,
    type: string,
    data: Record<string, unknown>,
    extra: Partial<SentWebhook> = {},
  ) => {
    const webhookId = `msg_${randomUUID()}`;
    const body = JSON.stringify({ type, timestamp: new Date().toISOString(), data });
    const hook: SentWebhook = { webhookId, source, kind, type, body, answers: [], ...extra };
    state.webhooks.push(hook);
    return post(hook);
  };

  const paymentData = (c: SentCommand) => ({
    payment_id: c.commandId,
    enrollment_id: c.targetId,
    amount_cents: c.amountCents,
    paid_on: new Date().toISOString().slice(0, 10),
    period: new Date().toISOString().slice(0, 7),
  });
  const decisionData = (c: SentCommand) => ({
    decision_id: c.commandId,
    application_id: c.targetId,
    decision: c.decision,
    // The command's key in the reason lets the ledger's write be traced back to its command.
    reason: `chaos ${c.key}`,
  });

  const pickSource = () => random.pick(options.sources);

  const newPayment = () => {
    seq += 1;
    const source = pickSource();
    const id = `pay_${randomUUID()}`;
    const command: SentCommand = {
      commandId: id,
      source: source.name,
      key: commandKey(source.name, id),
      kind: 'payment',
      targetId: String(random.pick(enrollmentsOf(source))),
      topic: 'commands.rental-payments',
      // Unique per payment, so that a ledger write names its command by its body alone.
      amountCents: 100_000 + seq,
      webhookIds: [],
    };
    state.commands.set(command.key, command);
    const p = send(source.name, 'payment', 'rent_payment.received', paymentData(command), {
      commandId: command.commandId,
      commandKey: command.key,
    });
    command.webhookIds.push(state.webhooks.at(-1)!.webhookId);
    return p;
  };

  const newDecision = async () => {
    const source = pickSource();
    // A scoped source now and then decides another owner's application: outside its scope.
    const outsideScope = source.owner !== undefined && random.chance(0.3);
    const owner = outsideScope ? `${ownerOf(source)}-other` : ownerOf(source);
    let applicationId: string;
    try {
      const [created] = await options.sandbox.addRecords('applications', [
        { status: 'submitted', chaos: true, owner_id: owner },
      ]);
      if (!created) throw new Error('the sandbox created no application');
      applicationId = String(created.id);
    } catch {
      state.controlErrors += 1;
      return;
    }
    const id = `dec_${randomUUID()}`;
    const command: SentCommand = {
      commandId: id,
      source: source.name,
      key: commandKey(source.name, id),
      ...(outsideScope && { outsideScope }),
      kind: 'decision',
      targetId: applicationId,
      topic: 'commands.application-decisions',
      decision: random.chance(0.7) ? 'approve' : 'decline',
      webhookIds: [],
    };
    state.commands.set(command.key, command);
    if (!outsideScope) decided.push(command);
    const p = send(source.name, 'decision', 'application.decided', decisionData(command), {
      commandId: command.commandId,
      commandKey: command.key,
    });
    command.webhookIds.push(state.webhooks.at(-1)!.webhookId);
    await p;
  };

  /** A second, different decision on an application already decided: must not be applied. */
  const conflictingDecision = () => {
    const earlier = decided.length > 0 ? random.pick(decided) : undefined;
    if (!earlier || earlier.conflicting) return newDecision();
    const id = `dec_${randomUUID()}`;
    const command: SentCommand = {
      commandId: id,
      // The same source as the first decision: within its scope.
      source: earlier.source,
      key: commandKey(earlier.source, id),
      kind: 'decision',
      targetId: earlier.targetId,
      topic: 'commands.application-decisions',
      decision: earlier.decision === 'approve' ? 'decline' : 'approve',
      conflicting: true,
      webhookIds: [],
    };
    earlier.conflicting = true;
    state.commands.set(command.key, command);
    const p = send(earlier.source, 'conflicting_decision', 'application.decided', decisionData(command), {
      commandId: command.commandId,
      commandKey: command.key,
    });
    command.webhookIds.push(state.webhooks.at(-1)!.webhookId);
    return p;
  };

  /**
   * A registration (unique e-mail); half ask to be enrolled too (a chained enrollment command
   * the consumer publishes), some are checked first, and some of those fail the check.
   */
  const newRegistration = () => {
    const source = pickSource();
    const id = `reg_${randomUUID()}`;
    const email = `${id}@chaos.example`;
    const enroll = random.chance(0.5);
    const check = random.chance(0.3);
    const data = {
      registration_id: id,
      pms_reference: `chaos-${id}`,
      first_name: 'Chaos',
      last_name: 'Registrant',
      email,
      // The check refuses a phone of 3 digits; the create itself accepts it.
      phone: check && random.chance(0.3) ? '555' : '5550100000',
      ...(check && { check }),
      ...(enroll && { enroll }),
    };
    const command: SentCommand = {
      commandId: id,
      source: source.name,
      key: commandKey(source.name, id),
      kind: 'registration',
      targetId: email,
      topic: 'commands.customer-registrations',
      email,
      type: 'customer.registration_requested',
      data,
      webhookIds: [],
    };
    state.commands.set(command.key, command);
    if (enroll) {
      const chained = `${id}.enrollment`;
      state.commands.set(commandKey(source.name, chained), {
        commandId: chained,
        // The chained enrollment acts for the registration's source, with its key: its identity's source.
        source: source.name,
        key: commandKey(source.name, chained),
        kind: 'enrollment',
        targetId: '',
        topic: 'commands.enrollments',
        viaRegistration: id,
        webhookIds: [],
      });
    }
    const p = send(source.name, 'registration', command.type!, data, {
      commandId: id,
      commandKey: command.key,
    });
    command.webhookIds.push(state.webhooks.at(-1)!.webhookId);
    return p;
  };

  const enrolled = new Map<string, string[]>();
  /** An enrollment of a new customer, or now and then a second one of an enrolled customer. */
  const newEnrollment = async () => {
    const source = pickSource();
    const mine = enrolled.get(source.name) ?? [];
    enrolled.set(source.name, mine);
    let customerId: string;
    if (mine.length > 0 && random.chance(0.2)) {
      customerId = random.pick(mine);
    } else {
      try {
        const [created] = await options.sandbox.addRecords('customers', [
          {
            first_name: 'Chaos',
            last_name: 'Enrollee',
            email: `cust_${randomUUID()}@chaos.example`,
            phone: '5550100001',
            owner_id: ownerOf(source),
          },
        ]);
        if (!created) throw new Error('the sandbox created no customer');
        customerId = String(created.id);
      } catch {
        state.controlErrors += 1;
        return;
      }
      mine.push(customerId);
    }
    const id = `enr_${randomUUID()}`;
    const data = { enrollment_request_id: id, customer_id: customerId, pms_reference: `chaos-${customerId}` };
    const command: SentCommand = {
      commandId: id,
      source: source.name,
      key: commandKey(source.name, id),
      kind: 'enrollment',
      targetId: customerId,
      topic: 'commands.enrollments',
      type: 'enrollment.requested',
      data,
      webhookIds: [],
    };
    state.commands.set(command.key, command);
    const p = send(source.name, 'enrollment', command.type!, data, {
      commandId: id,
      commandKey: command.key,
    });
    command.webhookIds.push(state.webhooks.at(-1)!.webhookId);
    await p;
  };

  /** The same command again under a new webhook-id (a PMS that re-sends): the guard's job. */
  const resendCommand = () => {
    const all = [...state.commands.values()].filter((c) => !c.viaRegistration);
    if (all.length === 0) return newPayment();
    const command = random.pick(all);
    const data = command.data ?? (command.kind === 'payment' ? paymentData(command) : decisionData(command));
    const type =
      command.type ?? (command.kind === 'payment' ? 'rent_payment.received' : 'application.decided');
    const p = send(command.source, 'resent_command', type, data, {
      commandId: command.commandId,
      commandKey: command.key,
    });
    command.webhookIds.push(state.webhooks.at(-1)!.webhookId);
    return p;
  };

  /** The same webhook again (same webhook-id): the receiver's dedupe answers 200 duplicate. */
  const replay = () => {
    const acked = state.webhooks.filter((w) => w.ackAt !== undefined && w.kind !== 'replay');
    if (acked.length === 0) return newPayment();
    const original = random.pick(acked);
    const hook: SentWebhook = {
      ...original,
      kind: 'replay',
      answers: [],
      ackAt: undefined,
      duplicate: undefined,
    };
    state.webhooks.push(hook);
    return post(hook);
  };

  /**
   * The second source reports a payment of its own under an id the first source already used:
   * another enrollment (in its own scope), another amount. Two commands, each applied once (issue 35).
   */
  const collidingPayment = () => {
    const second = options.sources.find((s) => s.name !== PRIMARY_SOURCE);
    const taken = [...state.commands.values()].filter(
      (c) => c.kind === 'payment' && c.source === PRIMARY_SOURCE,
    );
    if (!second || taken.length === 0) return newPayment();
    const earlier = random.pick(taken);
    const key = commandKey(second.name, earlier.commandId);
    if (state.commands.has(key)) return newPayment();
    seq += 1;
    const command: SentCommand = {
      commandId: earlier.commandId,
      source: second.name,
      key,
      collidesWith: earlier.key,
      kind: 'payment',
      targetId: String(random.pick(enrollmentsOf(second))),
      topic: 'commands.rental-payments',
      amountCents: 100_000 + seq,
      webhookIds: [],
    };
    state.commands.set(key, command);
    const p = send(second.name, 'colliding_payment', 'rent_payment.received', paymentData(command), {
      commandId: command.commandId,
      commandKey: key,
    });
    command.webhookIds.push(state.webhooks.at(-1)!.webhookId);
    return p;
  };

  const unrouted = () => {
    const marker = `chaos-marker-${randomUUID()}`;
    return send(pickSource().name, 'unrouted', 'tenant.moved_out', { tenant_ref: marker }, { marker });
  };

  const recordChange = async () => {
    const id = random.pick(options.customerIds);
    const change: RecordChange = {
      resource: 'customers',
      id: String(id),
      updatedAt: null,
      at: Date.now(),
      ok: false,
    };
    state.recordChanges.push(change);
    try {
      const record = await options.sandbox.patchRecord('customers', id, {
        chaos_note: `change ${randomUUID()}`,
      });
      change.updatedAt = typeof record.updated_at === 'string' ? record.updated_at : null;
      change.ok = true;
    } catch {
      state.controlErrors += 1;
    }
  };

  const tick = () => {
    if (stopped) return;
    // Bounded: when the system stalls, the generator does not pile up thousands of requests.
    if (inFlight.size < 400) {
      const r = random.next();
      const action =
        r < 0.31
          ? newPayment
          : r < 0.35
            ? collidingPayment
            : r < 0.42
              ? newRegistration
              : r < 0.47
                ? newEnrollment
                : r < 0.6
                  ? newDecision
                  : r < 0.65
                    ? conflictingDecision
                    : r < 0.7
                      ? resendCommand
                      : r < 0.75
                        ? replay
                        : r < 0.8
                          ? unrouted
                          : recordChange;
      const p: Promise<void> = Promise.resolve()
        .then(action)
        .catch(() => undefined)
        .finally(() => inFlight.delete(p));
      inFlight.add(p);
    }
  };

  return {
    state,
    start() {
      timer = setInterval(tick, Math.max(1, Math.round(1000 / options.rate)));
    },
    async stop() {
      stopped = true;
      if (timer) clearInterval(timer);
      while (inFlight.size > 0) await Promise.all([...inFlight]);
    },
  };
}
