/**
 * Entry point of the `enrollments` command consumer (src/command-consumer/, its row in
 * src/command-types/command-types.ts): the same as `rentbridge consumer enrollments`, wired by
 * src/app/composition-root.ts.
 */
process.argv.splice(2, process.argv.length - 2, 'consumer', 'enrollments');
await import('../src/cli/main.js');
