import { createCompositionRoot } from '../../app/composition-root.js';
import { checkEmail, erasePerson } from '../../erasure/erase-person.js';
import { formatReceipt } from '../../erasure/erasure-receipt.js';
import { topicSettingsFromConfig } from '../../kafka/topic-settings.js';
import { cliActor } from '../cli-actor.js';
import { loadConfigOrExit, UsageError } from '../process.js';
import { requireMigrated } from '../require-migrated.js';

export interface EraseCliOptions {
  email?: string;
  dryRun?: boolean;
  note?: string;
  format?: string;
  actor?: string;
}

/**
 * `rentbridge erase --email <address> [--dry-run] [--note TEXT] [--format table|json]`: erases one
 * person (src/erasure/, docs/privacy.md) and prints the receipt. Exit 0 (also when nothing was
 * found: the receipt says so with its zeros); 2 on bad usage.
 */
export async function erase(opts: EraseCliOptions): Promise<void> {
  const problem = checkEmail(opts.email);
  if (problem) throw new UsageError(`--${problem}`);
  const format = opts.format ?? 'table';
  if (format !== 'table' && format !== 'json')
    throw new UsageError(`--format must be table or json, not "${format}"`);
  if (opts.note !== undefined && opts.note.length > 1000)
    throw new UsageError('--note: at most 1000 characters');
  const root = createCompositionRoot(loadConfigOrExit());
  await requireMigrated(root.config.DATABASE_URL, root.logger);
  try {
    const receipt = await erasePerson(root.db, topicSettingsFromConfig(root.config), {
      email: opts.email!,
      dryRun: opts.dryRun === true,
      ...(opts.note ? { note: opts.note } : {}),
      actor: cliActor(opts.actor),
    });
    process.stdout.write(
      format === 'json' ? `${JSON.stringify(receipt, null, 2)}\n` : formatReceipt(receipt),
    );
  } finally {
    await root.close();
  }
  process.exitCode = 0;
}
