import { describe, expect, it } from 'vitest';
import { runDlq, type DlqDeps } from '../../src/cli/commands/dlq.js';
import { UsageError } from '../../src/cli/process.js';
import { createLogger } from '../../src/logger.js';

/** Parsing only: no command here reaches its action, so nothing touches a database or Kafka. */
function depsWith(output: string[]): DlqDeps {
  const never = () => Promise.reject(new Error('parsing alone must not reach the database or Kafka'));
  return {
    db: new Proxy({}, { get: () => never }) as never,
    topicPrefix: '',
    logger: createLogger({ level: 'silent' }),
    producer: never,
    out: (text) => output.push(text),
    isTTY: false,
    confirm: () => Promise.resolve(false),
    env: {},
  };
}

describe('rentbridge dlq options', () => {
  describe('when asked for help', () => {
    it('prints every option of the command, declared once, and exits 0', async () => {
      const output: string[] = [];
      expect(await runDlq('redrive', ['--help'], depsWith(output))).toBe(0);
      const help = output.join('\n');
      for (const option of [
        '--where',
        '--dry-run',
        '--correct-file',
        '--note',
        '--command-type',
        '--time-field',
      ])
        expect(help).toContain(option);
    });
  });

  describe('when the command line is wrong', () => {
    it('is a usage error before anything runs', async () => {
      const deps = depsWith([]);
      await expect(runDlq('list', ['--no-such-option'], deps)).rejects.toThrow(UsageError);
      await expect(runDlq('show', [], deps)).rejects.toThrow(/missing required argument/);
      await expect(runDlq('list', ['--command-type', 'refund'], deps)).rejects.toThrow(/command-type/);
      await expect(runDlq('purge', [], deps)).rejects.toThrow(/unknown dlq command "purge"/);
    });
  });
});
