/**
 * Entry point of the `enrollments` command consumer (over src/commands/command-runner.ts):
 * the same as `rentbridge consumer enrollments`, wired by src/app/composition-root.ts.
 */
process.argv.splice(2, process.argv.length - 2, 'consumer', 'enrollments');
await import('../src/cli/main.js');
