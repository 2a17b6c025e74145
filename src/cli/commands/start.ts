import { resolve } from 'node:path';
import {
  COMMAND_CONSUMER_NAMES,
  createCompositionRoot,
  runRoles,
  type CompositionRoot,
} from '../../app/composition-root.js';
import type { HttpRole } from '../../app/http-role.js';
import type { Component } from '../../app/lifecycle.js';
import type { Config } from '../../config/config.js';
import { migrate } from '../../db/migrate.js';
import { scheduledReconcile } from '../../app/reconcile-role.js';
import { startDemoPmsCallbacks } from '../../dev/demo/demo-pms-callbacks.js';
import { startDemoTraffic } from '../../dev/demo/demo-traffic.js';
import { createLogger } from '../../logger.js';
import { resolveLogFormat } from '../../log-format.js';
import { createSandboxControl, startSandbox, type Sandbox } from '../../dev/sandbox/index.js';
import { loadConfigOrExit, UsageError } from '../process.js';
import { startBanner, type BannerFields } from '../start-banner.js';
import { DEMO_PMS_SOURCE } from '../demo-names.js';
import { sourceIsolationProblem } from '../../config/source-isolation.js';
import { requireProbeAssumptions } from '../../partner-probe/probe-gate.js';
import { startLocalServers } from '../../dev/local-servers/local-servers.js';
import { canListen } from '../../dev/local-servers/ports.js';
import { projectRoot } from '../../dev/local-servers/project-root.js';
import { sandboxStore } from '../sandbox-store.js';

/** The ops token of a demo run when OPS_TOKEN is unset: documented in the README, not a secret. */
export const DEMO_OPS_TOKEN = 'rentbridge-demo-ops-token';

/**
 * Webhook secrets of a demo run when none are configured: fixed and documented in the README
 * (with a ready `curl` example), like the demo ops token, so a newcomer can sign a webhook to the
 * demo. Not secrets: a demo run talks only to its embedded sandbox.
 */
export const DEMO_PMS_WEBHOOK_SECRET = 'whsec_cmVudGJyaWRnZS1kZW1vLXBtcy13ZWJob29rLWtleSE=';
export const DEMO_PARTNER_WEBHOOK_SECRET = 'whsec_cmVudGJyaWRnZS1kZW1vLXBhcnRuZXItd2ViaG9va3M=';
/** The demo PMS's callback signing secret (src/dev/demo/demo-pms-callbacks.ts): fixed, not a secret. */
export const DEMO_PMS_CALLBACK_SECRET = 'whsec_cmVudGJyaWRnZS1kZW1vLXBtcy1jYWxsYmFja3Mh';

/**
 * `start --demo`: the embedded sandbox with demo data stands in for the
 * Partner API, and the webhook secrets and ops token it needs are filled in.
 */
function demoConfig(config: Config, callbackUrl?: string): Config {
  return Object.freeze({
    ...config,
    PARTNER_WEBHOOK_SECRETS: config.PARTNER_WEBHOOK_SECRETS.length
      ? config.PARTNER_WEBHOOK_SECRETS
      : [DEMO_PARTNER_WEBHOOK_SECRET],
    PMS_WEBHOOK_SECRETS: { [DEMO_PMS_SOURCE]: [DEMO_PMS_WEBHOOK_SECRET], ...config.PMS_WEBHOOK_SECRETS },
    OPS_TOKEN: config.OPS_TOKEN ?? DEMO_OPS_TOKEN,
    // The demo PMS hears the outcome of each of its commands (its log shows them).
    PMS_CALLBACKS: {
      ...(callbackUrl && { [DEMO_PMS_SOURCE]: { url: callbackUrl, secrets: [DEMO_PMS_CALLBACK_SECRET] } }),
      ...config.PMS_CALLBACKS,
    },
  });
}

/**
 * `rentbridge start` (`npm start`): every role in one process, with the servers it needs found or
 * started (src/dev/local-servers/local-servers.ts). Migrations and topics first, then HTTP (webhooks,
 * ops, metrics, health), the relay, the consumers and the dead-letter indexer, the poller; on
 * SIGTERM / SIGINT they stop in the reverse order, then the servers started here, and the process
 * exits 0.
 */
export async function start(options: { demo?: boolean; fresh?: boolean } = {}): Promise<void> {
  const given = loadConfigOrExit();
  const demo = options.demo === true;
  requireDemoOrPartner(given, demo);
  // Before any server starts: a second `npm start` (or another program) on our ports stops here.
  await requireFreePorts(given, demo);
  const logger = createLogger({ level: given.LOG_LEVEL, format: resolveLogFormat(given.LOG_FORMAT) });
  // Until every role runs (then runRoles takes the signals): exit now, and the servers started
  // here are asked to stop as the process exits (src/dev/local-servers/).
  const duringStartUp = (signal: NodeJS.Signals) => {
    logger.warn({ component: 'start', signal }, 'signal during start-up: exiting');
    process.exit(signal === 'SIGINT' ? 130 : 143);
  };
  const running = () => {
    process.removeListener('SIGTERM', duringStartUp);
    process.removeListener('SIGINT', duringStartUp);
  };
  process.once('SIGTERM', duringStartUp);
  process.once('SIGINT', duringStartUp);
  const local = await startLocalServers({
    root: projectRoot(),
    ...(given.LOCAL_PG_DIR && { pgDir: resolve(given.LOCAL_PG_DIR) }),
    env: process.env,
    pgPort: given.LOCAL_PG_PORT,
    kafkaPort: given.LOCAL_KAFKA_PORT,
    fresh: options.fresh ?? false,
    logger,
  });
  try {
    const withServers: Config = Object.freeze({
      ...given,
      ...(local.databaseUrl && { DATABASE_URL: local.databaseUrl }),
      ...(local.kafkaBrokers && { KAFKA_BROKERS: local.kafkaBrokers }),
    });
    const demoPms = demo
      ? await startDemoPmsCallbacks({ secret: DEMO_PMS_CALLBACK_SECRET, logger })
      : undefined;
    try {
      await runAll(demo ? demoConfig(withServers, demoPms?.url) : withServers, demo, logger, running);
    } finally {
      await demoPms?.close();
    }
  } finally {
    running();
    await local.stop();
  }
  logger.info({ component: 'start' }, 'rentbridge stopped');
  // pino writes asynchronously: the last lines are written, in order, before the exit (an exit
  // with a write still under way printed "rentbridge stopped" before the line logged ahead of it).
  await new Promise<void>((resolve) => logger.flush(() => resolve()));
  // Everything is stopped: nothing left (an idle pool's timer, a socket) may hold the exit back.
  process.exit(0);
}

/**
 * Production is never a demo (issue 51): the demo (embedded sandbox, demo PMS with a published
 * secret, the demo ops token) runs only when asked for by `--demo`; `start` without it needs the
 * Partner API (exit 2 naming PARTNER_API_URL), and `--demo` beside a PARTNER_API_URL is refused, so
 * neither can be mistaken for the other. The demo's one PMS source on the deployment key is held
 * to the same rule as configured sources (src/config/source-isolation.ts).
 */
function requireDemoOrPartner(config: Config, demo: boolean): void {
  if (!demo && !config.PARTNER_API_URL)
    throw new UsageError(
      'PARTNER_API_URL is not set: set it to the Partner API (with PARTNER_ACCESS_KEY and PARTNER_SECRET_KEY), or run `rentbridge start --demo` (`npm start`) for the demo with its embedded sandbox',
    );
  if (demo && config.PARTNER_API_URL)
    throw new UsageError(
      '--demo runs the embedded sandbox in place of the Partner API: unset PARTNER_API_URL, or leave out --demo',
    );
  if (demo) {
    const problem = sourceIsolationProblem(demoConfig(config));
    if (problem) throw new UsageError(`PMS_PARTNER_KEYS: ${problem}`);
  }
}

/** The ports `start` listens on, free before anything starts (exit 2 naming the busy ones). */
async function requireFreePorts(config: Config, demo: boolean): Promise<void> {
  const wanted = [
    { port: config.HTTP_PORT, name: 'HTTP_PORT', host: undefined },
    ...(demo ? [{ port: config.SANDBOX_PORT, name: 'SANDBOX_PORT', host: '127.0.0.1' }] : []),
  ].filter((p) => p.port !== 0);
  const busy: string[] = [];
  for (const { port, name, host } of wanted)
    if (!(await canListen(port, host))) busy.push(`${port} (${name})`);
  if (busy.length === 0) return;
  throw new UsageError(
    `port ${busy.join(' and ')} already in use: is rentbridge already running (http://localhost:${config.HTTP_PORT}/healthz)? Stop it, or set ${wanted
      .map((p) => p.name)
      .join(' / ')} to free ports`,
  );
}

async function runAll(
  config: Config,
  demo: boolean,
  logger: ReturnType<typeof createLogger>,
  running: () => void,
): Promise<void> {
  const root = createCompositionRoot(config, logger);
  // `start` runs the command consumers too: the same refusal as `rentbridge consumer`.
  requireProbeAssumptions(config, logger);

  let sandbox: Sandbox | undefined;
  await runRoles(
    root,
    () => {
      let httpRole: HttpRole | undefined;
      return [
        ...(demo ? [() => sandboxComponent(root, (s) => (sandbox = s))] : []),
        () => (httpRole = root.http()),
        () => root.relay(),
        // Stopped together: each waits for its fetch in flight, and they share nothing.
        () =>
          together('consumers', [
            ...COMMAND_CONSUMER_NAMES.map((name) => root.commandConsumer(name)),
            root.deadLetterIndexer(),
            // Outcome callbacks to the PMS sources of PMS_CALLBACKS (none configured: not built).
            ...[root.callbacks()].filter((c) => c !== null),
          ]),
        () => root.poller(),
        // The scheduled reconciliation (RECONCILE_INTERVAL; 0: none), poll-lane work like the poller.
        () => scheduledReconcile(root),
        () =>
          announce(root, {
            demo,
            sandbox,
            port: httpRole!.port,
            running,
            pretty: resolveLogFormat(config.LOG_FORMAT) === 'pretty',
          }),
      ];
    },
    {
      before: async () => {
        await migrate(config.DATABASE_URL, { logger });
        await root.ensureTopics();
      },
    },
  );
}

/**
 * Components started and stopped all at once (independent of each other). Started at once, not in
 * turn: after a crash each consumer's join waits for the broker to drop the dead process's member
 * (up to its session timeout), and those waits overlap instead of adding up.
 */
function together(name: string, components: Component[]): Component {
  const started: Component[] = [];
  const stopAll = async () => {
    const results = await Promise.allSettled(started.splice(0).map((c) => c.stop()));
    const failed = results.find((r) => r.status === 'rejected');
    if (failed) throw failed.reason;
  };
  return {
    name,
    // The heartbeat reports each role inside (the overview expects `consumer:<name>`, `dead-letters`).
    roles: components.flatMap((c) => c.roles ?? [c.name]),
    async start() {
      const results = await Promise.allSettled(
        components.map(async (c) => {
          await c.start();
          started.push(c);
        }),
      );
      const failed = results.find((r) => r.status === 'rejected');
      if (failed) {
        await stopAll();
        throw failed.reason;
      }
    },
    stop: stopAll,
  };
}

/**
 * The embedded Partner API sandbox with demo data, standing in for PARTNER_API_URL: the root's
 * one Partner client is pointed at it, and it sends its webhooks to this process.
 */
function sandboxComponent(root: CompositionRoot, started: (sandbox: Sandbox) => void): Component {
  const { config, logger } = root;
  let sandbox: Sandbox | undefined;
  return {
    name: 'sandbox',
    async start() {
      sandbox = await startSandbox({
        port: config.SANDBOX_PORT,
        seed: 'demo',
        logger,
        persistence: sandboxStore(root.db),
      });
      started(sandbox);
      root.usePartnerUrl(sandbox.url);
      await createSandboxControl(sandbox.url).setConfig({
        webhook_url: `http://127.0.0.1:${config.HTTP_PORT}/webhooks/partner`,
        webhook_secret: config.PARTNER_WEBHOOK_SECRETS[0] ?? null,
      });
      logger.info(
        { component: 'start', sandboxUrl: sandbox.url, restored: sandbox.restored },
        sandbox.restored
          ? '--demo: started the embedded Partner API sandbox with the data it had when it stopped, and pointed rentbridge at it'
          : '--demo: started the embedded Partner API sandbox with demo data, and pointed rentbridge at it',
      );
    },
    async stop() {
      await sandbox?.close();
    },
  };
}

/** The demo's traffic (when demo), then the line that says where to look. */
function announce(
  root: CompositionRoot,
  {
    demo,
    sandbox,
    port,
    running,
    pretty,
  }: { demo: boolean; sandbox: Sandbox | undefined; port: number; running: () => void; pretty: boolean },
): Component {
  const { config, logger } = root;
  let traffic: { stop(): Promise<void> } | undefined;
  return {
    name: 'demo',
    async start() {
      // The last component: from here a signal stops every role in order (runRoles).
      running();
      const base = `http://localhost:${port}`;
      if (demo && sandbox) {
        traffic = startDemoTraffic({
          receiverUrl: `http://127.0.0.1:${port}`,
          source: DEMO_PMS_SOURCE,
          secret: config.PMS_WEBHOOK_SECRETS[DEMO_PMS_SOURCE]![0]!,
          sandbox: createSandboxControl(sandbox.url),
          logger,
          // The doomed commands (dead-lettered on purpose) once per data set: a restart adds none.
          doomed: !sandbox.restored,
        });
      }
      const fields: BannerFields = {
        console: `${base}/ops`,
        metrics: `${base}/metrics`,
        ready: `${base}/readyz`,
        ...(config.OPS_TOKEN === DEMO_OPS_TOKEN && { demoOpsToken: DEMO_OPS_TOKEN }),
        // The fixed demo secrets only (docs/running.md, "What npm start shows"), never configured ones.
        ...(demo &&
          config.PMS_WEBHOOK_SECRETS[DEMO_PMS_SOURCE]?.[0] === DEMO_PMS_WEBHOOK_SECRET && {
            demoPmsWebhook: `${base}/webhooks/pms/${DEMO_PMS_SOURCE}`,
            demoPmsWebhookSecret: DEMO_PMS_WEBHOOK_SECRET,
          }),
      };
      if (pretty) {
        // After every start-up line is written: the banner is the last thing on the screen.
        await new Promise<void>((done) => logger.flush(() => done()));
        process.stdout.write(startBanner(fields, demo));
      } else {
        logger.info(
          { component: 'start', ...fields },
          demo
            ? 'rentbridge is running (demo): open the console, events and commands flow within a minute'
            : 'rentbridge is running',
        );
      }
    },
    async stop() {
      await traffic?.stop();
    },
  };
}
