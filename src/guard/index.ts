export { guardedWrite, GuardBusyError, GuardInterruptedError } from './guarded-write.js';
export { createCommandLocks } from './command-lock.js';
export type { CommandLock, CommandLocks, CommandLocksOptions } from './command-lock.js';
export type { GuardDeps, GuardInput, GuardOptions, GuardResult } from './guarded-write.js';
export {
  createCommandRepository,
  FINAL_STATES,
  isFinal,
  resetCommandRow,
  sameContent,
} from './command-repository.js';
export type {
  CommandRecord,
  CommandRepository,
  FailureInput,
  FinalState,
  GuardError,
  GuardState,
} from './command-repository.js';
export { APPLIED_STATES, RESETTABLE_STATES, redriveReset } from './guard-machine.js';
export type { ReadBackStrategy, Snapshot, Verdict } from './read-back.js';
export { VERDICTS } from './read-back.js';
export { keyPinnedReadBack, SNAPSHOT_KEY_FACT } from './key-pinned-read-back.js';
export { applicationDecisionReadBack, DECISION_TARGET_STATUS } from './application-decision-read-back.js';
export { rentalPaymentReadBack } from './rental-payment-read-back.js';
export { customerRegistrationReadBack, sameEmail } from './customer-registration-read-back.js';
export { enrollmentReadBack, enrollmentOf } from './enrollment-read-back.js';
export { findNewest } from './newest-first.js';
export { createThrottleGate, type ThrottleGate } from './throttle-gate.js';
export {
  writeRequestId,
  readRequestId,
  preferredRequestIdBase,
  plainRequestIdBase,
  hashedRequestIdBase,
} from './command-request-ids.js';
export type { GuardPartner } from './partner-port.js';
export { createSnapshotPageCache } from './snapshot-page-cache.js';
export { createSnapshotStore, type SnapshotStore } from './snapshot-store.js';
export { createPaymentLedger, type PaymentLedger } from './payment-ledger.js';
export type { SnapshotPageCache, SnapshotPageCacheOptions } from './snapshot-page-cache.js';
