import { notYet } from './not-yet.js';
export async function pollOnce(_opts: { resource?: string }): Promise<void> {
  notYet('poll --once', 6);
}
