import { setTimeout as sleep } from 'node:timers/promises';

/**
 * A 429 means the shared budget is spent (spec 8: every process on the egress IP shares it): the
 * whole consumer waits, not only the command that met it. The gate holds the pause, tells the
 * owner to pause/resume its Kafka fetches and the shared budget, and makes every write wait.
 */
export interface ThrottleGate {
  /** Resolves once no pause is in force (rejects if `signal` aborts). */
  wait(signal?: AbortSignal): Promise<void>;
  /** Pauses everything until `until` (a later pause extends it). */
  pause(until: Date): Promise<void>;
  /** Clears the timer (on stop). */
  close(): void;
}

export interface ThrottleHooks {
  onPause?(until: Date): Promise<void> | void;
  onResume?(): Promise<void> | void;
}

export function createThrottleGate(hooks: ThrottleHooks = {}): ThrottleGate {
  let until = 0;
  let timer: NodeJS.Timeout | undefined;
  return {
    async wait(signal) {
      while (Date.now() < until) await sleep(until - Date.now(), undefined, { signal });
    },
    async pause(date) {
      if (date.getTime() <= until) return;
      until = date.getTime();
      await hooks.onPause?.(date);
      clearTimeout(timer);
      // A failed resume must not kill the process; the next pause or restart resumes anyway.
      timer = setTimeout(
        () => void Promise.resolve(hooks.onResume?.()).catch(() => undefined),
        Math.max(0, until - Date.now()),
      );
      timer.unref();
    },
    close() {
      clearTimeout(timer);
    },
  };
}
