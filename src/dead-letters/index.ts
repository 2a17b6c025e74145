export {
  createDeadLetterIndexer,
  type DeadLetterIndexer,
  type DeadLetterIndexerOptions,
} from './dead-letter-indexer.js';
export { redriveDeadLetter, discardDeadLetter, type RedriveDeps, type RedriveOutcome } from './redrive.js';
export {
  searchDeadLetters,
  countDeadLetters,
  getDeadLetter,
  type DeadLetter,
} from './dead-letter-repository.js';
export { deadLetterFiltersSchema, type DeadLetterFilters } from './dead-letter-filters.js';
