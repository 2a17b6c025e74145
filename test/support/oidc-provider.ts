import type { Server } from 'node:http';
import Provider from 'oidc-provider';
import { freePort } from './free-port.js';

/**
 * A real OpenID provider for tests (oidc-provider, a certified implementation) on a free port:
 * its development sign-in form takes any account id (password ignored) and the people below.
 */
export const PEOPLE: Record<string, { name: string; groups: string[] }> = {
  vera: { name: 'Vera Viewer', groups: ['support'] },
  otto: { name: 'Otto Operator', groups: ['ops', 'staff'] },
  ada: { name: 'Ada Admin', groups: ['platform'] },
  uma: { name: 'Uma Unmapped', groups: ['marketing'] },
};

export const ROLE_MAP = { viewer: ['support'], operator: ['ops'], admin: ['platform'] };

export interface TestProvider {
  issuer: string;
  clientId: string;
  clientSecret: string;
  close(): Promise<void>;
}

export async function startTestProvider(redirectUri: string): Promise<TestProvider> {
  const clientId = 'rentbridge-ops';
  const clientSecret = 'test-client-secret-0123456789';
  const port = await freePort();
  const issuer = `http://127.0.0.1:${port}`;
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: [redirectUri],
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_post',
      },
    ],
    claims: { openid: ['sub'], profile: ['name', 'groups'], email: ['email'] },
    cookies: { keys: ['test-cookie-key-0123456789'] },
    pkce: { required: () => true },
    findAccount: (_ctx, id) => {
      const person = PEOPLE[id] ?? { name: id, groups: [] };
      return { accountId: id, claims: () => ({ sub: id, name: person.name, groups: person.groups }) };
    },
  });
  const listening = provider.listen(port, '127.0.0.1') as Server;
  await new Promise((r) => listening.once('listening', r));
  return {
    issuer,
    clientId,
    clientSecret,
    close: () => new Promise((r) => listening.close(() => r())),
  };
}
