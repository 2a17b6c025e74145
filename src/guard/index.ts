export { guardedWrite, GuardBusyError, GuardInterruptedError } from './guarded-write.js';
export { createCommandLocks } from './store/command-lock.js';
export type { CommandLock, CommandLocks, CommandLocksOptions } from './store/command-lock.js';
export type { GuardDeps, GuardInput, GuardOptions, GuardResult } from './guarded-write.js';
export {
  createCommandRepository,
  FINAL_STATES,
  isFinal,
  resetCommandRow,
  sameContent,
} from './store/command-repository.js';
export type {
  CommandRecord,
  CommandRepository,
  FailureInput,
  FinalState,
  GuardError,
  GuardState,
} from './store/command-repository.js';
export { APPLIED_STATES, RESETTABLE_STATES, redriveReset } from './machine/guard-machine.js';
export {
  createSnapshotPageCache,
  keyPinnedReadBack,
  SNAPSHOT_KEY_FACT,
  VERDICTS,
  type ReadBackStrategy,
  type Snapshot,
  type SnapshotPageCache,
  type SnapshotPageCacheOptions,
  type Verdict,
} from './read-backs/read-back.js';
export { findNewest } from './read-backs/newest-first.js';
export { createThrottleGate, type ThrottleGate } from './guard-effects.js';
export {
  writeRequestId,
  readRequestId,
  preferredRequestIdBase,
  plainRequestIdBase,
  hashedRequestIdBase,
} from './machine/command-record.js';
export type { GuardPartner } from './read-backs/partner-port.js';
export { createSnapshotStore, type SnapshotStore } from './read-backs/snapshot-store.js';
