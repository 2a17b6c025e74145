import { notYet } from './not-yet.js';
export async function receiver(): Promise<void> {
  notYet('receiver', 5);
}
