import { randomBytes, randomUUID } from 'node:crypto';
import { SignJWT, jwtVerify } from 'jose';
import { SandboxError } from './sandbox-error.js';
import type { SandboxRecord } from './record-store.js';

/** The key pair a fresh sandbox accepts (DESIGN.md). */
export const DEFAULT_ACCESS_KEY = 'sandbox-access-key';
export const DEFAULT_SECRET_KEY = 'sandbox-secret-key';

export interface ApiKey {
  access_key: string;
  secret_key: string;
  /** Spec 5.8: a read-only key gets `403 forbidden` on every write. */
  read_only: boolean;
  /** Spec 5.9: when set, only records with one of these `owner_id`s (or groups below) are visible. */
  owner_ids: Array<string | number> | null;
  property_group_ids: Array<string | number> | null;
  /** Bumped each time the key is (re)created, so a revoked-then-recreated key's old tokens stay dead. */
  generation: string;
}

function unauthenticated(message: string): SandboxError {
  return new SandboxError(401, 'unauthenticated', message);
}

/**
 * The keys of this sandbox and the HS256 tokens issued for them (spec 5). The signing secret
 * is new per sandbox (and per reset), so a token never outlives the sandbox that issued it.
 */
export class KeyRing {
  private readonly keys = new Map<string, ApiKey>();
  private secret = new Uint8Array(randomBytes(32));

  constructor() {
    this.add({ access_key: DEFAULT_ACCESS_KEY, secret_key: DEFAULT_SECRET_KEY });
  }

  add(input: {
    access_key: string;
    secret_key: string;
    read_only?: boolean;
    owner_ids?: Array<string | number> | null;
    property_group_ids?: Array<string | number> | null;
  }): ApiKey {
    const key: ApiKey = {
      access_key: input.access_key,
      secret_key: input.secret_key,
      read_only: input.read_only ?? false,
      // Spec 5.9, held as a scope: a key given an empty list is scoped to nothing and sees no
      // record (it never falls open to every record); only a key given no list is unscoped.
      owner_ids: input.owner_ids ?? null,
      property_group_ids: input.property_group_ids ?? null,
      generation: randomUUID(),
    };
    this.keys.set(key.access_key, key);
    return key;
  }

  /** Revokes a key and with it every token issued for it. */
  revoke(accessKey: string): boolean {
    return this.keys.delete(accessKey);
  }

  list(): ApiKey[] {
    return [...this.keys.values()];
  }

  /** The keys and the token signing secret, for a saved sandbox: its tokens stay valid across a restart. */
  dump(): { keys: ApiKey[]; secret: string } {
    return { keys: this.list(), secret: Buffer.from(this.secret).toString('base64') };
  }

  load(saved: { keys: ApiKey[]; secret: string }): void {
    this.keys.clear();
    for (const key of saved.keys) this.keys.set(key.access_key, key);
    this.secret = new Uint8Array(Buffer.from(saved.secret, 'base64'));
  }

  /** `POST /partner/v1/authenticate`: the key pair must match a live key. */
  check(accessKey: string, secretKey: string): ApiKey {
    const key = this.keys.get(accessKey);
    if (!key || key.secret_key !== secretKey) throw unauthenticated('invalid access key or secret key');
    return key;
  }

  async issue(key: ApiKey, ttlSeconds: number, extra: Record<string, unknown> = {}): Promise<string> {
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({ gen: key.generation, ...extra })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setSubject(key.access_key)
      .setIssuedAt(now)
      .setExpirationTime(now + ttlSeconds)
      .setJti(randomUUID())
      .sign(this.secret);
  }

  /**
   * Spec 5.7: a missing, malformed, forged (wrong signature or algorithm), expired or revoked
   * token is `401 unauthenticated`. Customer SDK tokens are not API tokens.
   */
  async verify(authorization: string | undefined): Promise<ApiKey> {
    if (!authorization) throw unauthenticated('missing bearer token');
    const match = /^Bearer\s+(\S+)$/i.exec(authorization);
    if (!match?.[1]) throw unauthenticated('malformed Authorization header');
    let payload;
    try {
      ({ payload } = await jwtVerify(match[1], this.secret, { algorithms: ['HS256'] }));
    } catch (error) {
      const code = (error as { code?: string }).code;
      throw unauthenticated(code === 'ERR_JWT_EXPIRED' ? 'token expired' : 'invalid token');
    }
    if (payload.customer_id !== undefined) throw unauthenticated('a customer token is not an API token');
    const key = typeof payload.sub === 'string' ? this.keys.get(payload.sub) : undefined;
    if (!key || key.generation !== payload.gen) throw unauthenticated('token revoked');
    return key;
  }
}

/** Spec 5.9: whether a scoped key may see a record (a key with no scope sees everything). */
export function inScope(key: ApiKey, record: SandboxRecord): boolean {
  if (!key.owner_ids && !key.property_group_ids) return true;
  // A key scoped to owners and to groups sees a record matching either list.
  const owner = record.owner_id;
  const group = record.property_group_id;
  if (key.owner_ids && owner != null && key.owner_ids.some((o) => String(o) === String(owner))) return true;
  if (
    key.property_group_ids &&
    group != null &&
    key.property_group_ids.some((g) => String(g) === String(group))
  )
    return true;
  return false;
}

/** A short stable text of a key's scope, for caching scoped views. */
export function scopeKey(key: ApiKey): string {
  if (!key.owner_ids && !key.property_group_ids) return '*';
  return `o:${(key.owner_ids ?? []).join(',')}|g:${(key.property_group_ids ?? []).join(',')}`;
}
