/** Budget lanes, priority high → low: writes, then the guard's read-backs, then the poller. */
export type Lane = 'write' | 'readback' | 'poll';
export const LANES: readonly Lane[] = ['write', 'readback', 'poll'];
export const LANE_RANK: Record<Lane, number> = { write: 0, readback: 1, poll: 2 };

/**
 * How long a PMS source's oldest command may wait for a slot before a person should look: one
 * budget window. The same bound as the alert RentbridgeSourceCommandsWaiting
 * (monitoring/prometheus/alerts.yml, `> 60`) and the overview's attention list; a test holds them equal.
 */
export const SOURCE_WAIT_BOUND_SECONDS = 60;

/** The request budget every process on one egress IP shares (spec 8). */
export interface RateBudget {
  /**
   * Waits for a slot in the rolling one-minute window, behind every higher lane that waits, and
   * within its lane in turn with the other sources that wait (`source`: the PMS source the call
   * is made for; default the scope's, src/partner/partner-client.ts).
   */
  acquire(lane: Lane, signal?: AbortSignal, source?: string): Promise<void>;
  /** After a 429: no process takes a slot before `until`. Called by the one handler of a 429 only (throttle.ts). */
  pauseUntil(until: Date): Promise<void>;
  /**
   * The API reported `remaining` requests left in its window (another system may share the IP).
   * Stored one at a time per process, the newest report first; resolves once it is stored (or
   * failed, logged). A report under a smaller limit than this budget's (`limit`, the answer's
   * X-RateLimit-Limit: the 650/min scope's answer to the token budget's sign-in, spec 8) says
   * nothing of this budget's window and is dropped; a larger one may be the API's own where the
   * budget was set below it, and is learned as before.
   */
  learn(remaining: number, resetAt: Date, limit?: number): Promise<void>;
  snapshot(): Promise<{ used: number; left: number; pausedUntil: Date | null }>;
  close?(): Promise<void>;
}
