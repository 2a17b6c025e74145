import { execFile, execFileSync } from 'node:child_process';

/**
 * promtool (Debian's `prometheus` package; .ci/run installs it) checks /metrics and runs the alert
 * rules' unit tests. Its tests are skipped only on a machine without it that is not CI, and say
 * so; on CI a missing promtool fails them.
 */
export const hasPromtool: boolean = (() => {
  try {
    execFileSync('promtool', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

export const skipPromtool = !hasPromtool && !process.env.CI;
if (skipPromtool) {
  console.warn(
    'promtool is not installed: the promtool checks of /metrics and the alert rules are SKIPPED (apt-get install prometheus)',
  );
}

/** Runs promtool with `args` (and `input` on its standard input): exit code and everything it printed. */
export function promtool(args: string[], options: { cwd?: string; input?: string } = {}) {
  return new Promise<{ code: number | null; output: string }>((resolve, reject) => {
    const child = execFile('promtool', args, { cwd: options.cwd });
    let output = '';
    child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, output }));
    child.stdin!.end(options.input ?? '');
  });
}
