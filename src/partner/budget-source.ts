import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * The PMS source a Partner API call is made for, as the shared budget sees it (issue 52: slots go
 * round-robin by source). The guard runs each command's walk in its source's scope, so its
 * snapshot, its write and its read-backs, made deep in the command types' read-backs, are counted
 * to that source without each call passing it along. A call made outside any scope (the poller,
 * resync, the console's reads) is counted to no source.
 */
const scope = new AsyncLocalStorage<string>();

/** Runs `work` with its Partner API calls counted to `source`. */
export function forBudgetSource<T>(source: string, work: () => Promise<T>): Promise<T> {
  return scope.run(source, work);
}

/** The source the current call is made for, if any. */
export function budgetSource(): string | undefined {
  return scope.getStore();
}
