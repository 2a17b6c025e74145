import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { inject } from 'vitest';
import { describe, expect, it } from 'vitest';
import type { BenchResult } from '../../bench/types.js';

const run = promisify(execFile);

/**
 * The path a reader follows from a payment's Kafka message to its outcome stays short (issue 40,
 * docs/code-map.md): measured by `npm run bench -- path` (V8 coverage over one payment, in a
 * process of its own, the sandbox in another), held to at most 28 files in at most 6 folders (25
 * before decision 054: the consumer's loop and its pure key-order core became files of their own;
 * 27 before the consumer's health noted each commit, issue 53: a consumer works again after an outage).
 */
describe('the payment path', () => {
  it('runs through at most 28 files of src/ in at most 6 folders, none of them development-only', async () => {
    const { stdout } = await run('npx', ['tsx', 'bench/payment-path.ts'], {
      env: { ...process.env, DATABASE_URL: inject('databaseUrl'), KAFKA_BROKERS: inject('kafkaBrokers') },
      maxBuffer: 1 << 20,
    });
    const result = JSON.parse(stdout.slice(stdout.indexOf('{'))) as BenchResult;
    const files = result.notes![0]!.replace(/^the files: /, '').split(', ');
    // The measure saw the payment: its consumer, the guard's machine, its read-back, the client.
    expect(files).toEqual(
      expect.arrayContaining([
        'command-consumer/run-command.ts',
        'guard/machine/guard-machine.ts',
        'command-types/rental-payments/rental-payment-read-back.ts',
        'partner/transport.ts',
        'kafka/shared-producer.ts',
      ]),
    );
    expect(files.filter((f) => f.startsWith('dev/'))).toEqual([]);
    expect(result.figures.files).toBe(files.length);
    expect(files.length).toBeLessThanOrEqual(28);
    expect(result.figures.folders).toBeLessThanOrEqual(6);
  });
});
