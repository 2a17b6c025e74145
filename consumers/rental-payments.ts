/**
 * Entry point of the `rental-payments` command consumer (over src/commands/command-runner.ts):
 * the same as `rentbridge consumer rental-payments`, wired by src/app/composition-root.ts.
 */
process.argv.splice(2, process.argv.length - 2, 'consumer', 'rental-payments');
await import('../src/cli/main.js');
