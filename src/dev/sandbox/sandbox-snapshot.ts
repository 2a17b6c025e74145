import type { Logger } from '../../logger.js';
import type { ApiKey } from './api-keys.js';
import type { SandboxRecord } from './record-store.js';
import { defaultConfig, type SandboxConfig } from './sandbox-config.js';
import type { SandboxState } from './sandbox-state.js';
import type { LedgerEntry } from './write-ledger.js';

/**
 * A sandbox kept across restarts (`rentbridge start`, docs/decisions/047): its records with their
 * ids and times, its keys and token secret, its settings and its write ledger, saved as one
 * document. Faults, rate counters and webhook deliveries are not kept: they belong to a moment.
 */
export interface SandboxSnapshot {
  version: 1;
  /** When the data set was first seeded (kept across restarts: the demo's age). */
  seededAt: string;
  collections: Record<string, { nextId: number; records: SandboxRecord[] }>;
  keys: { keys: ApiKey[]; secret: string };
  config: SandboxConfig;
  ledger: LedgerEntry[];
}

/** Where a sandbox's snapshot lives (the PostgreSQL of `rentbridge start`, src/cli/sandbox-store.ts). */
export interface SandboxPersistence {
  load(): Promise<SandboxSnapshot | null>;
  save(snapshot: SandboxSnapshot): Promise<void>;
}

export function snapshotOf(state: SandboxState, seededAt: string): SandboxSnapshot {
  return {
    version: 1,
    seededAt,
    collections: state.store.dump(),
    keys: state.keys.dump(),
    config: state.config,
    ledger: state.ledger.list(),
  };
}

export function restoreSnapshot(state: SandboxState, saved: SandboxSnapshot): void {
  state.store.load(saved.collections);
  state.keys.load(saved.keys);
  // Settings added since the snapshot was saved take their defaults.
  state.config = { ...defaultConfig(), ...saved.config };
  state.ledger.load(saved.ledger);
}

/**
 * How often a changing sandbox is saved. The demo's 3,875 records are about 0.9 MB of JSON, and a
 * save took 0.1–0.75 s on the shared 2-core machine under load (decision 047): every 5 s, a
 * `kill -9` loses at most the last 5 s of sandbox changes; a clean stop loses nothing.
 */
export const SAVE_EVERY_MS = 5000;

/**
 * Saves the sandbox when it changed: at most once per `everyMs`, and a last time on `stop()`.
 * A change is a record's (the store's revision), or any other write (`touch()`: keys, settings,
 * a reset). A save that fails is logged and tried again at the next tick: the sandbox keeps
 * answering from memory.
 */
export class SnapshotSaver {
  private timer: NodeJS.Timeout | undefined;
  private savedRevision = -1;
  private touched = true;
  private saving: Promise<void> = Promise.resolve();

  constructor(
    private readonly state: SandboxState,
    private readonly persistence: SandboxPersistence,
    private readonly seededAt: string,
    private readonly logger: Logger,
    private readonly everyMs = SAVE_EVERY_MS,
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.saveIfChanged(), this.everyMs);
    this.timer.unref();
  }

  /** A change the store's revision does not show (keys, settings, a reset, the ledger). */
  touch(): void {
    this.touched = true;
  }

  saveIfChanged(): Promise<void> {
    this.saving = this.saving.then(async () => {
      const revision = this.state.store.revision;
      if (!this.touched && revision === this.savedRevision) return;
      this.touched = false;
      try {
        await this.persistence.save(snapshotOf(this.state, this.seededAt));
        this.savedRevision = revision;
      } catch (error) {
        this.touched = true;
        this.logger.warn({ err: error }, 'sandbox state could not be saved; trying again');
      }
    });
    return this.saving;
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.saveIfChanged();
  }
}
