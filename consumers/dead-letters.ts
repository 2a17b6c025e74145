/**
 * Entry point of the dead-letter indexer (every `*.dlq` topic into PostgreSQL for ops):
 * the same as `rentbridge consumer dead-letters`, wired by src/app/composition-root.ts.
 */
process.argv.splice(2, process.argv.length - 2, 'consumer', 'dead-letters');
await import('../src/cli/main.js');
