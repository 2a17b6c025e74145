import { type Command, InvalidArgumentError } from 'commander';
import { OPS_ROLES, type OpsRole } from '../ops/ops-roles.js';

/** `rentbridge ops-token create|list|revoke` and `rentbridge audit verify` (docs/ops-access.md). */
export function registerOpsAccess(program: Command): void {
  const tokens = () => import('./commands/ops-token.js');
  const opsToken = program
    .command('ops-token')
    .description('personal tokens of the ops API: create (shown once), list, revoke');
  opsToken
    .command('create')
    .description('a new token; printed alone on the last line, once (only its hash is kept)')
    .requiredOption('--name <name>', "the token's name (the audit's actor is token:<name>)")
    .requiredOption('--role <role>', OPS_ROLES.join(' | '), (value: string): OpsRole => {
      if (!(OPS_ROLES as readonly string[]).includes(value)) {
        throw new InvalidArgumentError(`must be one of ${OPS_ROLES.join(', ')}`);
      }
      return value as OpsRole;
    })
    .option(
      '--expires <days|never>',
      'expires after this many days, e.g. 30d (default: 90d); `never` for a token that never expires',
      (value: string): number | 'never' => {
        if (value === 'never') return 'never';
        const match = /^([1-9][0-9]{0,3})d?$/.exec(value);
        if (!match) throw new InvalidArgumentError('a number of days, e.g. 30d, or never');
        return Number(match[1]);
      },
    )
    .action(async (opts: { name: string; role: OpsRole; expires?: number | 'never' }) =>
      (await tokens()).create(opts),
    );
  opsToken
    .command('list')
    .description('name, role, created, expires, last used (never the token)')
    .option('--revoked', 'also revoked tokens')
    .option('--json', 'print JSON')
    .action(async (opts: { revoked?: boolean; json?: boolean }) => (await tokens()).list(opts));
  opsToken
    .command('revoke')
    .argument('<name>')
    .description('revoke the token at once, in every process')
    .action(async (name: string) => (await tokens()).revoke(name));

  program
    .command('audit')
    .description('the audit trail')
    .command('verify')
    .description('walk the hash chain of audit_log: exit 0 when it holds, 1 naming the first bad entry')
    .option('--json', 'print the report as JSON')
    .action(async (opts: { json?: boolean }) => (await import('./commands/audit.js')).verify(opts));
}
