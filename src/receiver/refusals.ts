/**
 * The webhooks this process refused, by request id, for an hour (issue 54): a refused webhook is
 * never stored (nothing of it may be trusted, and storing what any caller sends would let anyone
 * fill the database), so its `request_id`, which the refusal's answer carries, would lead nowhere.
 * The console's trace, served by this same process, reads it here ("refused at the receiver:
 * <reason>"); `rentbridge trace` (another process) says where to look instead. Memory only,
 * bounded: at most MAX_KEPT refusals, the oldest dropped first.
 */
export interface Refusal {
  requestId: string;
  source: string;
  status: number;
  code: string;
  /** Why, as the answer said it (which header, which field; never a value). */
  reason: string;
  at: Date;
}

export const REFUSALS_KEPT_MS = 60 * 60 * 1000;
const MAX_KEPT = 1000;
const refusals = new Map<string, Refusal>();

export function rememberRefusal(refusal: Refusal): void {
  if (refusals.size >= MAX_KEPT) refusals.delete(refusals.keys().next().value!);
  refusals.set(refusal.requestId, refusal);
}

export function refusalOf(requestId: string, now = Date.now()): Refusal | null {
  const refusal = refusals.get(requestId);
  if (!refusal) return null;
  if (now - refusal.at.getTime() > REFUSALS_KEPT_MS) {
    refusals.delete(requestId);
    return null;
  }
  return refusal;
}
