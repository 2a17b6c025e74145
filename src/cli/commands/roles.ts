import { notYet } from './not-yet.js';
export async function runRole(role: 'receiver' | 'relay' | 'poller'): Promise<void> {
  notYet(role, role === 'poller' ? 6 : 5);
}
export async function runConsumer(name: string): Promise<void> {
  notYet(`consumer ${name}`, name === 'dead-letters' ? 8 : 7);
}
