import { notYet } from './not-yet.js';
export async function consumer(name: string): Promise<void> {
  notYet(`consumer ${name}`, name === 'dead-letters' ? 8 : 7);
}
