/**
 * Entry point of the `application-decisions` command consumer (src/command-consumer/, its row in
 * src/command-types/command-types.ts): the same as `rentbridge consumer application-decisions`, wired by
 * src/app/composition-root.ts.
 */
process.argv.splice(2, process.argv.length - 2, 'consumer', 'application-decisions');
await import('../src/cli/main.js');
