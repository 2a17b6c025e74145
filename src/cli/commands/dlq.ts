import { notYet } from './not-yet.js';
export async function dlq(sub: string, _args: string[]): Promise<void> {
  notYet(`dlq ${sub}`, 8);
}
