import { createHash } from 'node:crypto';
import type { Config } from '../config/config.js';
import { exposeMetrics, metrics } from '../metrics.js';
import { sourcesTrustEachOther } from '../config/source-isolation.js';

/**
 * Which Partner API key acts for a PMS source (issue 34, docs/decisions/026-source-partner-keys.md).
 * A source configured in PMS_PARTNER_KEYS gets a client of its own (its own key, its own cached
 * API token) for every call made for it: its commands' writes, snapshots and read-backs, and its
 * customer-token requests. Any other source, and every caller that acts for no source (the
 * poller), uses the deployment key. The platform then decides what the source may reach (spec
 * 5.8 read-only, 5.9 scoped keys); rentbridge keeps no authorization model of its own.
 *
 * Every client shares the process's one rate budget: the limits are per egress IP (spec 8), not
 * per key.
 */

/** Which key a source uses: its own (PMS_PARTNER_KEYS) or the deployment's (PARTNER_ACCESS_KEY). */
export type KeyUse = 'own' | 'deployment';

export interface SourceKey {
  accessKey: string;
  secretKey: string;
  /** Meant to be read-only (spec 5.8): `rentbridge probe` checks that writes are refused. */
  readOnly?: boolean;
  /** Meant to be scoped (spec 5.9): `rentbridge probe` checks that it sees fewer records. */
  scoped?: boolean;
}

export interface SourcePartner<P> {
  partner: P;
  key: KeyUse;
  /**
   * Names the key that reads for the source, never showing it: `deployment`, or `own:` and the
   * first 12 hex digits of the SHA-256 of its access key (a new key for the source is a new id).
   * A command's snapshot carries it, so its read-back can tell it reads with the same key.
   */
  keyId: string;
}

/** The id of a source's own key: a digest of its access key, never the key. */
export function ownKeyId(accessKey: string): string {
  return `own:${createHash('sha256').update(accessKey).digest('hex').slice(0, 12)}`;
}

export interface SourcePartners<P> {
  /** The client acting for `source` (null: no source, the deployment key). */
  forSource(source: string | null | undefined): SourcePartner<P>;
  /** Which key a source uses, without building its client. */
  keyOf(source: string | null | undefined): KeyUse;
  /** The clients built so far (their token managers, for shutdown). */
  built(): P[];
}

/** PMS_PARTNER_KEYS as source → key (camelCase, the shape the clients take). */
export function sourceKeys(config: Pick<Config, 'PMS_PARTNER_KEYS'>): Record<string, SourceKey> {
  return Object.fromEntries(
    Object.entries(config.PMS_PARTNER_KEYS).map(([source, k]) => [
      source,
      {
        accessKey: k.access_key,
        secretKey: k.secret_key,
        ...(k.read_only !== undefined && { readOnly: k.read_only }),
        ...(k.scoped !== undefined && { scoped: k.scoped }),
      },
    ]),
  );
}

/**
 * Per source, its client: built on first use (a source that never sends anything never
 * authenticates), then kept, so its API token is cached like the deployment client's.
 */
export function createSourcePartners<P>(options: {
  deployment: () => P;
  keys: Readonly<Record<string, SourceKey>>;
  build: (source: string, key: SourceKey) => P;
}): SourcePartners<P> {
  const clients = new Map<string, P>();
  const has = (source: string | null | undefined): source is string =>
    source != null && Object.prototype.hasOwnProperty.call(options.keys, source);
  return {
    keyOf: (source) => (has(source) ? 'own' : 'deployment'),
    forSource(source) {
      if (!has(source)) return { partner: options.deployment(), key: 'deployment', keyId: 'deployment' };
      const key = options.keys[source]!;
      let client = clients.get(source);
      if (!client) {
        client = options.build(source, key);
        clients.set(source, client);
      }
      return { partner: client, key: 'own', keyId: ownKeyId(key.accessKey) };
    },
    built: () => [...clients.values()],
  };
}

/**
 * `rentbridge_source_partner_key{source, key}`: for every configured PMS source, 1 on the key that
 * acts for it and 0 on the other (never the key itself), so a dashboard shows which sources are
 * bounded by a key of their own.
 */
export function publishSourceKeys(
  config: Pick<
    Config,
    'PMS_WEBHOOK_SECRETS' | 'PMS_PARTNER_KEYS' | 'PMS_SHARED_PARTNER_KEY' | 'PARTNER_ACCESS_KEY'
  >,
): void {
  exposeMetrics('sourceKeys');
  metrics.sharedKeyTrusted.set(sourcesTrustEachOther(config) ? 1 : 0);
  for (const source of Object.keys(config.PMS_WEBHOOK_SECRETS)) {
    const own = Object.prototype.hasOwnProperty.call(config.PMS_PARTNER_KEYS, source);
    metrics.sourcePartnerKey.set({ source, key: 'own' }, own ? 1 : 0);
    metrics.sourcePartnerKey.set({ source, key: 'deployment' }, own ? 0 : 1);
  }
}
