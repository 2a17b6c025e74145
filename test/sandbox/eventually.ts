import { vi } from 'vitest';

/** Polls `check` (vitest's `vi.waitFor`) until it returns a value other than undefined, for `timeoutMs`. */
export function eventually<T>(check: () => Promise<T | undefined>, timeoutMs = 5000): Promise<T> {
  return vi.waitFor(
    async () => {
      const value = await check();
      if (value === undefined) throw new Error('condition not met in time');
      return value;
    },
    { timeout: timeoutMs, interval: 20 },
  );
}
