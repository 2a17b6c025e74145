import { notYet } from './not-yet.js';
export async function poller(): Promise<void> {
  notYet('poller', 6);
}
