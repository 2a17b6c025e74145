import { UsageError } from '../process.js';

export const CONSUMERS = [
  'application-decisions',
  'rental-payments',
  'customer-registrations',
  'enrollments',
  'dead-letters',
] as const;

export async function consumer(name: string): Promise<void> {
  switch (name) {
    case 'application-decisions':
    case 'rental-payments':
    case 'customer-registrations':
    case 'enrollments':
      return (await import('../../../consumers/start-command-consumer.js')).runCommandConsumer(name);
    case 'dead-letters':
      return (await import('./dead-letters-consumer.js')).deadLettersConsumer();
    default:
      throw new UsageError(`unknown consumer "${name}": expected one of ${CONSUMERS.join(', ')}`);
  }
}
