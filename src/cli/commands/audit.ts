import { createCompositionRoot } from '../../app/composition-root.js';
import { verifyAuditChain } from '../../audit/audit-verify.js';
import { terminalSafe } from '../../terminal-text.js';
import { loadConfigOrExit } from '../process.js';

/**
 * `rentbridge audit verify`: walks the hash chain of audit_log (src/audit/audit-verify.ts).
 * Exit 0 when it holds; 1 naming the first entry that does not. Progress on stderr.
 */
export async function verify(opts: { json?: boolean }): Promise<void> {
  const root = createCompositionRoot(loadConfigOrExit());
  try {
    let said = 0;
    const report = await verifyAuditChain(root.db, (checked) => {
      if (checked - said >= 10_000) {
        said = checked;
        process.stderr.write(`checked ${checked} entries…\n`);
      }
    });
    if (opts.json) process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    else {
      const lines = [
        `${report.checked} chained entries checked${report.legacy ? `; ${report.legacy} older entries written before the chain began (not covered)` : ''}`,
        ...(report.prunedThrough
          ? [
              `pruned (oldest first) through entry #${report.prunedThrough.id}${report.prunedThrough.at ? `, written ${report.prunedThrough.at.toISOString()}` : ''}`,
            ]
          : []),
        ...(report.erased
          ? [
              `${report.erased} entries' details erased on request${report.erasedLegacy ? ` (${report.erasedLegacy} of them chained before issue 51: held by their place in the chain only)` : ''}`,
            ]
          : []),
        ...(report.head ? [`head: entry #${report.head.id}, hash ${report.head.hash}`] : []),
        report.ok ? 'the audit chain holds' : `the audit chain is broken: ${report.firstBreak!.problem}`,
      ];
      (report.ok ? process.stdout : process.stderr).write(`${lines.map(terminalSafe).join('\n')}\n`);
    }
    if (!report.ok) process.exitCode = 1;
  } finally {
    await root.close();
  }
}
