import { startCommandConsumer } from '../../../consumers/start-command-consumer.js';
import type { Config } from '../../config/config.js';
import { migrate } from '../../db/migrate.js';
import { startDemoTraffic } from '../../demo/demo-traffic.js';
import { createLogger } from '../../logger.js';
import { startHttpRole } from '../../roles/http-role.js';
import { createRuntime } from '../../runtime.js';
import { createSandboxControl, startSandbox, type Sandbox } from '../../sandbox/index.js';
import { loadConfigOrExit, runUntilSignal, type Service } from '../process.js';
import { buildDeadLetterIndexer } from './dead-letters-consumer.js';
import { buildPoller } from './poller.js';
import { buildRelay } from './relay.js';
import { requireProbeAssumptions } from '../../probe/probe-gate.js';

/** The ops token of a demo run when OPS_TOKEN is unset: documented in the README, not a secret. */
export const DEMO_OPS_TOKEN = 'rentbridge-demo-ops-token';
const DEMO_PMS_SOURCE = 'demo-pms';

/**
 * Webhook secrets of a demo run when none are configured: fixed and documented in the README
 * (with a ready `curl` example), like the demo ops token, so a newcomer can sign a webhook to the
 * demo. Not secrets: a demo run talks only to its embedded sandbox.
 */
export const DEMO_PMS_WEBHOOK_SECRET = 'whsec_cmVudGJyaWRnZS1kZW1vLXBtcy13ZWJob29rLWtleSE=';
export const DEMO_PARTNER_WEBHOOK_SECRET = 'whsec_cmVudGJyaWRnZS1kZW1vLXBhcnRuZXItd2ViaG9va3M=';

/**
 * Without PARTNER_API_URL, `start` is a demo: the embedded sandbox with demo data stands in for the
 * Partner API, and the webhook secrets and ops token it needs are filled in.
 */
function demoConfig(config: Config): Config {
  return Object.freeze({
    ...config,
    PARTNER_WEBHOOK_SECRETS: config.PARTNER_WEBHOOK_SECRETS.length
      ? config.PARTNER_WEBHOOK_SECRETS
      : [DEMO_PARTNER_WEBHOOK_SECRET],
    PMS_WEBHOOK_SECRETS: { [DEMO_PMS_SOURCE]: [DEMO_PMS_WEBHOOK_SECRET], ...config.PMS_WEBHOOK_SECRETS },
    OPS_TOKEN: config.OPS_TOKEN ?? DEMO_OPS_TOKEN,
  });
}

/**
 * `rentbridge start`: every role in one process. Migrations and topics first, then HTTP
 * (webhooks, ops, metrics, health), the relay, the poller, both command consumers and the
 * dead-letter indexer; stopped in the reverse order.
 */
export async function start(): Promise<void> {
  const given = loadConfigOrExit();
  const demo = !given.PARTNER_API_URL;
  const config = demo ? demoConfig(given) : given;
  const runtime = createRuntime(config, createLogger({ level: config.LOG_LEVEL }));
  const { logger } = runtime;
  // `start` runs the command consumers too: the same refusal as `rentbridge consumer`.
  requireProbeAssumptions(config, logger);

  await runUntilSignal(logger, async () => {
    const services: Service[] = [];
    const stopAll = async () => {
      for (const s of services.reverse())
        await s.stop().catch((err: unknown) => logger.error({ err }, 'stop failed'));
      await runtime.close();
    };
    try {
      await migrate(config.DATABASE_URL, { logger });
      await runtime.ensureTopics();

      let partnerUrl = config.PARTNER_API_URL;
      let sandbox: Sandbox | undefined;
      if (demo) {
        sandbox = await startSandbox({ port: config.SANDBOX_PORT, seed: 'demo', logger });
        services.push({ stop: () => sandbox!.close() });
        partnerUrl = sandbox.url;
        await createSandboxControl(sandbox.url).setConfig({
          webhook_url: `http://127.0.0.1:${config.HTTP_PORT}/webhooks/partner`,
          webhook_secret: config.PARTNER_WEBHOOK_SECRETS[0] ?? null,
        });
        logger.info(
          { component: 'start', sandboxUrl: sandbox.url },
          'PARTNER_API_URL is not set: started the embedded Partner API sandbox with demo data, and pointed rentbridge at it',
        );
      }

      const http = await startHttpRole(runtime, partnerUrl ? { partnerUrl } : {});
      services.push(http);

      const relay = buildRelay(runtime);
      await relay.start();
      services.push(relay);

      for (const name of [
        'application-decisions',
        'rental-payments',
        'customer-registrations',
        'enrollments',
      ] as const) {
        services.push(await startCommandConsumer(runtime, name, { partnerUrl: partnerUrl! }));
      }

      const indexer = buildDeadLetterIndexer(runtime);
      await indexer.start();
      services.push(indexer);

      const poller = buildPoller(runtime, { partnerUrl: partnerUrl! });
      await poller.poller.start();
      services.push({ stop: () => poller.poller.stop().then(() => poller.close()) });

      const base = `http://localhost:${http.port}`;
      if (demo && sandbox) {
        services.push(
          startDemoTraffic({
            receiverUrl: `http://127.0.0.1:${http.port}`,
            source: DEMO_PMS_SOURCE,
            secret: config.PMS_WEBHOOK_SECRETS[DEMO_PMS_SOURCE]![0]!,
            sandbox: createSandboxControl(sandbox.url),
            logger,
          }),
        );
      }
      logger.info(
        {
          component: 'start',
          console: `${base}/ops`,
          metrics: `${base}/metrics`,
          ready: `${base}/readyz`,
          ...(config.OPS_TOKEN === DEMO_OPS_TOKEN && { demoOpsToken: DEMO_OPS_TOKEN }),
          // The fixed demo secrets only (README: "What npm start shows"), never configured ones.
          ...(demo &&
            config.PMS_WEBHOOK_SECRETS[DEMO_PMS_SOURCE]?.[0] === DEMO_PMS_WEBHOOK_SECRET && {
              demoPmsWebhook: `${base}/webhooks/pms/${DEMO_PMS_SOURCE}`,
              demoPmsWebhookSecret: DEMO_PMS_WEBHOOK_SECRET,
            }),
        },
        demo
          ? 'rentbridge is running (demo): open the console, events and commands flow within a minute'
          : 'rentbridge is running',
      );
    } catch (error) {
      await stopAll();
      throw error;
    }
    return { stop: stopAll };
  });
}
