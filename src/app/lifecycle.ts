import type { Logger } from '../logger.js';

/** Something running that can be stopped gracefully (the work in hand is finished). */
export interface Service {
  stop(): Promise<void>;
}

/**
 * Every component the composition root builds has this one shape: built without side effects,
 * `start()` begins its work, `stop()` finishes the work in hand and releases what it holds.
 */
export interface Component extends Service {
  /** For logs: `http`, `relay`, `poller`, `consumer:<name>`, `dead-letters`, `sandbox`, `demo`. */
  readonly name: string;
  /**
   * The roles it runs, when it runs more than one (`start` runs the consumers together): each is
   * reported by the role heartbeat (src/ops/role-heartbeat.ts). Default: `[name]`.
   */
  readonly roles?: readonly string[];
  start(): Promise<void>;
}

/**
 * Starts the components in order and returns one service that stops the started ones in the
 * reverse order, then runs `finally` (closing what they shared). A component that fails to start
 * stops those already started before the error is rethrown.
 */
export async function startInOrder(
  components: Iterable<Component | (() => Promise<Component | null> | Component | null)>,
  logger: Logger,
  options: { finally?: () => Promise<void> } = {},
): Promise<Service> {
  const started: Component[] = [];
  const stopAll = async () => {
    for (const c of started.reverse())
      await c.stop().catch((err: unknown) => logger.error({ err, component: c.name }, 'stop failed'));
    started.length = 0;
    await options.finally?.();
  };
  try {
    for (const entry of components) {
      const component = typeof entry === 'function' ? await entry() : entry;
      if (!component) continue;
      await component.start();
      started.push(component);
    }
  } catch (error) {
    await stopAll();
    throw error;
  }
  return { stop: stopAll };
}

/**
 * Runs a long-lived role until SIGTERM or SIGINT, then stops it gracefully (the work in hand is
 * finished). A second signal, or a stop that takes longer than `graceMs`, exits at once.
 */
export async function runUntilSignal(
  logger: Logger,
  start: () => Promise<Service>,
  options: { graceMs?: number } = {},
): Promise<void> {
  const service = await start();
  await new Promise<void>((resolve) => {
    let stopping = false;
    const onSignal = (signal: NodeJS.Signals) => {
      if (stopping) {
        logger.warn({ signal }, 'second signal: exiting now');
        process.exit(1);
      }
      stopping = true;
      logger.info({ signal }, 'shutting down');
      const timer = setTimeout(() => {
        logger.error({ graceMs: options.graceMs ?? 30_000 }, 'graceful shutdown timed out: exiting');
        process.exit(1);
      }, options.graceMs ?? 30_000);
      timer.unref();
      service
        .stop()
        .catch((error: unknown) => logger.error({ err: error }, 'error while shutting down'))
        .finally(() => {
          clearTimeout(timer);
          resolve();
        });
    };
    // `on`, not `once`: a second signal of the same kind must reach onSignal (exit now, with the
    // process's exit hooks) rather than Node's default, which kills the process without them.
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  });
  logger.info('stopped');
}
