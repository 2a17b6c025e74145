import type { Config } from '../config/config.js';
import type { OidcSettings } from './oidc-router.js';

/** The single sign-on settings from the configuration (OPS_OIDC_ISSUER and OPS_OIDC_CLIENT_ID set). */
export function oidcSettings(config: Config): OidcSettings {
  return {
    issuer: config.OPS_OIDC_ISSUER!,
    clientId: config.OPS_OIDC_CLIENT_ID!,
    ...(config.OPS_OIDC_CLIENT_SECRET && { clientSecret: config.OPS_OIDC_CLIENT_SECRET }),
    redirectUrl: config.OPS_OIDC_REDIRECT_URL ?? `http://localhost:${config.HTTP_PORT}/ops/auth/callback`,
    rolesClaim: config.OPS_OIDC_ROLES_CLAIM,
    roleMap: config.OPS_ROLE_MAP,
    sessionTtlSeconds: config.OPS_SESSION_TTL_SECONDS,
  };
}
