import type { Config } from '../config/config.js';
import { UsageError } from './process.js';

/**
 * The Partner API a one-off command talks to (`reconcile`, `resync`, `probe`): PARTNER_API_URL,
 * or, when it is unset, the embedded sandbox of a running `npm start` (the demo), found as `dlq`
 * and `trace` find its database: at the address the demo uses (127.0.0.1, SANDBOX_PORT), asked
 * once whether it answers as the sandbox. Neither: a usage error (exit 2) saying both ways out,
 * before anything is started or stored.
 */
export async function partnerApiUrl(config: Config, say: (line: string) => void): Promise<string> {
  if (config.PARTNER_API_URL) return config.PARTNER_API_URL;
  const url = `http://127.0.0.1:${config.SANDBOX_PORT}`;
  const answers = await fetch(`${url}/__sandbox/config`, { signal: AbortSignal.timeout(3000) })
    .then((res) => res.ok)
    .catch(() => false);
  if (!answers) {
    throw new UsageError(
      `PARTNER_API_URL is not set, and no \`npm start\` demo's sandbox answers at ${url} (SANDBOX_PORT): set PARTNER_API_URL to the Partner API, or start the demo first`,
    );
  }
  say(`PARTNER_API_URL is not set: using the running demo's embedded sandbox at ${url}`);
  return url;
}
