import { z } from 'zod';

/**
 * Single sign-on for the ops console (docs/ops-access.md), spread into src/config/config.ts's
 * schema. Unset OPS_OIDC_ISSUER: no single sign-on; tokens (personal ones and OPS_TOKEN) still work.
 */

/** The ops roles, least first (src/ops/ops-roles.ts says what each may do). */
export const OPS_ROLES = ['viewer', 'operator', 'admin'] as const;
export type OpsRole = (typeof OPS_ROLES)[number];

const roleMap = z
  .string()
  .transform((v, ctx) => {
    try {
      return JSON.parse(v) as unknown;
    } catch {
      ctx.addIssue({
        code: 'custom',
        message: 'must be JSON, e.g. {"viewer":["support"],"operator":["ops"],"admin":["platform"]}',
      });
      return z.NEVER;
    }
  })
  .pipe(
    z
      .object({
        viewer: z.array(z.string().min(1)).optional(),
        operator: z.array(z.string().min(1)).optional(),
        admin: z.array(z.string().min(1)).optional(),
      })
      .strict(),
  );

export const opsAuthSettings = {
  /** The OpenID provider's issuer URL (discovery at <issuer>/.well-known/openid-configuration). Unset: no single sign-on. */
  OPS_OIDC_ISSUER: z.url({ protocol: /^https?$/, message: 'must be an http(s) URL' }).optional(),
  /** The console's client id at the provider. */
  OPS_OIDC_CLIENT_ID: z.string().min(1).optional(),
  /** Its client secret; unset: a public client (PKCE alone). */
  OPS_OIDC_CLIENT_SECRET: z.string().min(1).optional(),
  /** The sign-in callback as registered at the provider. Default http://localhost:<HTTP_PORT>/ops/auth/callback. */
  OPS_OIDC_REDIRECT_URL: z.url({ protocol: /^https?$/, message: 'must be an http(s) URL' }).optional(),
  /** The ID token / userinfo claim holding the person's groups. Default `groups`. */
  OPS_OIDC_ROLES_CLAIM: z.string().min(1).default('groups'),
  /** Role → claim values, JSON: {"viewer":["support"],"operator":["ops"],"admin":["platform"]}. Default {}. */
  OPS_ROLE_MAP: roleMap.default({}),
  /** How long a console session lasts after sign-in. Default 28800 s (8 h). */
  OPS_SESSION_TTL_SECONDS: z.coerce
    .number()
    .int()
    .min(60)
    .max(7 * 86_400)
    .default(28_800),
};

type OpsAuthConfig = {
  OPS_OIDC_ISSUER?: string | undefined;
  OPS_OIDC_CLIENT_ID?: string | undefined;
  OPS_ROLE_MAP: Partial<Record<OpsRole, string[]>>;
};

/** Problems of a half-configured single sign-on, as [variable, message]. */
export function opsAuthProblems(c: OpsAuthConfig): [string, string][] {
  if (!c.OPS_OIDC_ISSUER) return [];
  const problems: [string, string][] = [];
  if (!c.OPS_OIDC_CLIENT_ID) problems.push(['OPS_OIDC_CLIENT_ID', 'required with OPS_OIDC_ISSUER']);
  if (!OPS_ROLES.some((r) => c.OPS_ROLE_MAP[r]?.length)) {
    problems.push(['OPS_ROLE_MAP', 'required with OPS_OIDC_ISSUER: no one could sign in without a role']);
  }
  return problems;
}
