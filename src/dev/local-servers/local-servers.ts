import { rm } from 'node:fs/promises';
import { isAbsolute, join, relative, resolve } from 'node:path';
import type { Logger } from '../../logger.js';
import { UsageError } from '../../errors.js';
import { startEmbeddedPostgres, type EmbeddedPostgres } from './embedded-postgres.js';
import { startLocalKafka, type LocalKafka } from './local-kafka.js';
import { answers, canListen } from './ports.js';

/**
 * The servers `rentbridge start` (`npm start`) needs, found or started (docs/decisions/023):
 * DATABASE_URL / KAFKA_BROKERS when set; else what answers on 127.0.0.1:LOCAL_PG_PORT (5432) and
 * 127.0.0.1:LOCAL_KAFKA_PORT (9092); else an embedded PostgreSQL and the broker of
 * scripts/kafka.sh, started here and stopped by `stop()`. What was already running is left alone.
 */

export interface LocalServersOptions {
  /** The project's folder: scripts/kafka.sh, and the broker's data in `.kafka/`. */
  root: string;
  /** The embedded PostgreSQL's folder (LOCAL_PG_DIR; default `.postgres/` in the project). */
  pgDir?: string;
  /** The environment as given (`DATABASE_URL` / `KAFKA_BROKERS` set or not), not the parsed config. */
  env: NodeJS.ProcessEnv;
  pgPort: number;
  kafkaPort: number;
  /** Wipe the data of the servers started here first (`rentbridge start --fresh`). */
  fresh?: boolean;
  logger: Logger;
}

export interface LocalServers {
  /** Set when the database is not DATABASE_URL: the one found or started. */
  databaseUrl?: string;
  /** Set when the broker is not KAFKA_BROKERS: the one found or started. */
  kafkaBrokers?: string[];
  /** Stops what was started here (Kafka and PostgreSQL at once), waited for. */
  stop(): Promise<void>;
}

/** Where the embedded PostgreSQL keeps its cluster and log: `data/` and `postgres.log` in `dir`. */
export function postgresPaths(dir: string): { dataDir: string; logFile: string } {
  return { dataDir: join(dir, 'data'), logFile: join(dir, 'postgres.log') };
}

/** The Kafka controller port kafka.sh is given: KAFKA_CONTROLLER_PORT, else the broker's port + 1. */
function controllerPort(env: NodeJS.ProcessEnv, kafkaPort: number): number {
  const given = Number(env.KAFKA_CONTROLLER_PORT);
  return Number.isInteger(given) && given > 0 ? given : kafkaPort + 1;
}

export async function startLocalServers(options: LocalServersOptions): Promise<LocalServers> {
  const { root, env, logger: parent } = options;
  const logger = parent.child({ component: 'local-servers' });
  // Inside the project: relative, as docs/running.md names `.postgres/`; elsewhere the absolute path.
  const show = (path: string) => {
    const inside = relative(process.cwd(), path);
    return inside.startsWith('..') || isAbsolute(inside) ? path : inside || '.';
  };
  const pgAddress = `127.0.0.1:${options.pgPort}`;
  const kafkaAddress = `127.0.0.1:${options.kafkaPort}`;
  const pgWanted = !env.DATABASE_URL;
  const kafkaWanted = !env.KAFKA_BROKERS;
  const [pgFound, kafkaFound] = await Promise.all([
    pgWanted ? answers('127.0.0.1', options.pgPort) : false,
    kafkaWanted ? answers('127.0.0.1', options.kafkaPort) : false,
  ]);
  const startPg = pgWanted && !pgFound;
  const startKafka = kafkaWanted && !kafkaFound;
  const kafkaController = controllerPort(env, options.kafkaPort);
  if (startKafka && !(await canListen(kafkaController, '127.0.0.1'))) {
    throw new UsageError(
      `port ${kafkaController} (the local Kafka's controller, KAFKA_CONTROLLER_PORT) is already in use: choose another, or set KAFKA_BROKERS`,
    );
  }

  const pgPaths = postgresPaths(options.pgDir ?? join(root, '.postgres'));
  // scripts/kafka.sh's folder: KAFKA_DIR as the script reads it (relative to the project), else `.kafka/`.
  const kafkaDir = env.KAFKA_DIR ? resolve(root, env.KAFKA_DIR) : join(root, '.kafka');
  if (options.fresh)
    await wipeFresh({ startPg, startKafka, pgDataDir: pgPaths.dataDir, kafkaDir, logger, show });

  // Said first: Kafka's start takes a while (a minute or more the first time, its jars fetched).
  if (startPg || startKafka) {
    const where = [startPg && pgAddress, startKafka && kafkaAddress].filter(Boolean).join(' or ');
    const what = [startPg && 'an embedded PostgreSQL', startKafka && 'the Kafka broker of scripts/kafka.sh'];
    logger.info(
      {
        ...(startPg && { postgres: pgAddress, postgresData: show(pgPaths.dataDir) }),
        ...(startKafka && { kafka: kafkaAddress, kafkaData: show(join(kafkaDir, 'data')) }),
      },
      `nothing answers on ${where}: starting ${what.filter(Boolean).join(' and ')}`,
    );
  }
  // Both at once: PostgreSQL takes about a second, Kafka several (longer the first time: its jars).
  const [pgResult, kafkaResult] = await Promise.allSettled([
    startPg ? startEmbeddedPostgres({ ...pgPaths, port: options.pgPort }) : Promise.resolve(undefined),
    startKafka
      ? startLocalKafka({
          root,
          dir: kafkaDir,
          port: options.kafkaPort,
          controllerPort: kafkaController,
          logger: parent,
        })
      : Promise.resolve(undefined),
  ]);
  const postgres: EmbeddedPostgres | undefined = pgResult.status === 'fulfilled' ? pgResult.value : undefined;
  const kafka: LocalKafka | undefined = kafkaResult.status === 'fulfilled' ? kafkaResult.value : undefined;

  // Each server asks to be stopped when the process exits without stop() (see their modules).
  const stop = async () => {
    await Promise.all([
      postgres?.stop().then(() => logger.info({ address: pgAddress }, 'embedded PostgreSQL stopped')),
      kafka?.stop().then(() => logger.info({ address: kafkaAddress }, 'local Kafka broker stopped')),
    ]);
  };

  const failed = [pgResult, kafkaResult].find((r) => r.status === 'rejected');
  if (failed) {
    await stop();
    throw failed.reason;
  }

  reportServers({
    postgres,
    kafka,
    pgWanted,
    kafkaWanted,
    pgAddress,
    kafkaAddress,
    pgDataDir: pgPaths.dataDir,
    pgLog: pgPaths.logFile,
    logger,
    show,
  });

  return {
    ...(pgWanted && { databaseUrl: postgres?.url ?? `postgresql://postgres@${pgAddress}/postgres` }),
    ...(kafkaWanted && { kafkaBrokers: [kafka?.brokers ?? kafkaAddress] }),
    stop,
  };
}

interface Reporting {
  logger: Logger;
  /** A path as the log shows it: relative inside the project, else absolute. */
  show: (path: string) => string;
}

/** `--fresh`: the data folders of the servers about to be started here are emptied first. */
async function wipeFresh(
  o: Reporting & { startPg: boolean; startKafka: boolean; pgDataDir: string; kafkaDir: string },
): Promise<void> {
  const { startPg, startKafka, pgDataDir, kafkaDir, logger, show } = o;
  if (startPg) await rm(pgDataDir, { recursive: true, force: true });
  if (startKafka) {
    await rm(join(kafkaDir, 'data'), { recursive: true, force: true });
    await rm(join(kafkaDir, 'server.properties'), { force: true });
  }
  logger.info(
    {
      wiped: [startPg && show(pgDataDir), startKafka && show(join(kafkaDir, 'data'))].filter(Boolean),
    },
    '--fresh: the embedded servers start from empty folders (servers that were already running keep their data)',
  );
}

/** Says which servers were started here and which were found, and how to use others instead. */
function reportServers(
  o: Reporting & {
    postgres?: EmbeddedPostgres;
    kafka?: LocalKafka;
    pgWanted: boolean;
    kafkaWanted: boolean;
    pgAddress: string;
    kafkaAddress: string;
    pgDataDir: string;
    pgLog: string;
  },
): void {
  const { postgres, kafka, pgWanted, kafkaWanted, pgAddress, kafkaAddress, pgDataDir, pgLog, logger, show } =
    o;
  if (postgres) {
    logger.info(
      {
        address: pgAddress,
        dataDir: show(pgDataDir),
        log: show(pgLog),
        created: postgres.initialised,
      },
      `DATABASE_URL is unset and nothing answered on ${pgAddress} (LOCAL_PG_PORT): started an embedded PostgreSQL, stopped with rentbridge; its data stays for the next start`,
    );
  } else if (pgWanted) {
    logger.info(
      { address: pgAddress },
      `DATABASE_URL is unset: using the PostgreSQL that answers on ${pgAddress} (LOCAL_PG_PORT; left running at exit)`,
    );
  }
  if (kafka) {
    logger.info(
      { address: kafkaAddress, dataDir: show(kafka.dataDir), log: show(kafka.log) },
      `KAFKA_BROKERS is unset and nothing answered on ${kafkaAddress} (LOCAL_KAFKA_PORT): started the Kafka broker of scripts/kafka.sh, stopped with rentbridge; its data stays for the next start`,
    );
  } else if (kafkaWanted) {
    logger.info(
      { address: kafkaAddress },
      `KAFKA_BROKERS is unset: using the Kafka broker that answers on ${kafkaAddress} (LOCAL_KAFKA_PORT; left running at exit)`,
    );
  }
  if (pgWanted || kafkaWanted) {
    logger.info(
      { wipe: 'rentbridge start --fresh (npm start -- --fresh)' },
      'to use your own servers, set DATABASE_URL and KAFKA_BROKERS (docs/configuration.md)',
    );
  }
}
