import { z } from 'zod';

/**
 * Sources held apart (issue 51, docs/decisions/051-sources-fail-closed.md): with two or more PMS
 * sources, each acts with a Partner API key of its own, so that the platform holds it to its own
 * owners and property groups (spec 5.9). A source that would act with the deployment's key, or with
 * a key another source also holds, could reach every other source's tenants; the process refuses
 * to start (exit 2) naming those sources, unless `PMS_SHARED_PARTNER_KEY=trusted` says the sources
 * trust each other.
 */

/** `trusted`: the PMS sources of this deployment may share a key (they trust each other). Unset: they may not. */
export const sharedPartnerKeySetting = z
  .enum(['trusted'], { message: 'only "trusted" (the PMS sources trust each other), or unset' })
  .optional();

interface SourceKeys {
  PARTNER_ACCESS_KEY: string;
  PMS_WEBHOOK_SECRETS: Record<string, unknown>;
  PMS_PARTNER_KEYS: Record<string, { access_key: string; scoped?: boolean | undefined }>;
  PMS_SHARED_PARTNER_KEY?: 'trusted' | undefined;
}

/**
 * The PMS sources (those that sign webhooks) that do not act with a scoped key of their own: no
 * `PMS_PARTNER_KEYS` entry (the deployment's key), a key said to be unscoped (`scoped: false`), or
 * an access key another source or the deployment also uses. Sorted by name.
 */
export function sourcesWithoutOwnKey(config: SourceKeys): string[] {
  const sources = Object.keys(config.PMS_WEBHOOK_SECRETS);
  const holders = new Map<string, number>([[config.PARTNER_ACCESS_KEY, 1]]);
  for (const source of sources) {
    const key = config.PMS_PARTNER_KEYS[source];
    if (key) holders.set(key.access_key, (holders.get(key.access_key) ?? 0) + 1);
  }
  return sources
    .filter((source) => {
      const key = config.PMS_PARTNER_KEYS[source];
      return !key || key.scoped === false || (holders.get(key.access_key) ?? 0) > 1;
    })
    .sort();
}

/** Whether the sources share a key by the operator's word (`PMS_SHARED_PARTNER_KEY=trusted`) and there is more than one. */
export function sourcesTrustEachOther(config: SourceKeys): boolean {
  return (
    config.PMS_SHARED_PARTNER_KEY === 'trusted' &&
    Object.keys(config.PMS_WEBHOOK_SECRETS).length > 1 &&
    sourcesWithoutOwnKey(config).length > 0
  );
}

/** The refusal for a configuration whose sources are not held apart; null when they are (or trusted). */
export function sourceIsolationProblem(config: SourceKeys): string | null {
  const count = Object.keys(config.PMS_WEBHOOK_SECRETS).length;
  if (count < 2 || config.PMS_SHARED_PARTNER_KEY === 'trusted') return null;
  const without = sourcesWithoutOwnKey(config);
  if (without.length === 0) return null;
  const names = without.map((s) => `"${s}"`).join(', ');
  return (
    `${count} PMS sources, and ${names} ${without.length === 1 ? 'has' : 'have'} no scoped Partner API key of ` +
    `${without.length === 1 ? 'its' : 'their'} own, so one source could reach another's tenants: give each ` +
    'source its own scoped key (a key no other source or PARTNER_ACCESS_KEY uses), or set ' +
    'PMS_SHARED_PARTNER_KEY=trusted if these sources trust each other (docs/security.md)'
  );
}
