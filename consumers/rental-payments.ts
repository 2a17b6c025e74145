/**
 * Entry point of the `rental-payments` command consumer (src/command-consumer/, its row in
 * src/command-types/command-types.ts): the same as `rentbridge consumer rental-payments`, wired by
 * src/app/composition-root.ts.
 */
process.argv.splice(2, process.argv.length - 2, 'consumer', 'rental-payments');
await import('../src/cli/main.js');
