/**
 * Entry point of the `customer-registrations` command consumer (src/command-consumer/, its row in
 * src/command-types/command-types.ts): the same as `rentbridge consumer customer-registrations`, wired by
 * src/app/composition-root.ts.
 */
process.argv.splice(2, process.argv.length - 2, 'consumer', 'customer-registrations');
await import('../src/cli/main.js');
