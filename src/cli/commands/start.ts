import { notYet } from './not-yet.js';
export async function start(): Promise<void> {
  notYet('start', 9);
}
