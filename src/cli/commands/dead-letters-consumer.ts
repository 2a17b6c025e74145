import { notYet } from './not-yet.js';
export async function deadLettersConsumer(): Promise<void> {
  notYet('consumer dead-letters', 8);
}
