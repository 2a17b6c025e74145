import { SignJWT, decodeJwt } from 'jose';
import { describe, expect, it } from 'vitest';
import { useSandbox } from './sandbox-harness.js';

describe('sandbox authentication', () => {
  const h = useSandbox();

  describe('when a partner authenticates', () => {
    it('4.1/5.3: answers an HS256 JWT with its lifetime for a valid key pair', async () => {
      const response = await h.api('POST', '/partner/v1/authenticate', {
        token: null,
        body: { access_key: 'sandbox-access-key', secret_key: 'sandbox-secret-key' },
      });
      expect(response.status).toBe(200);
      expect(response.body.expires_in).toBe(3600);
      const [header] = (response.body.token as string).split('.');
      expect(JSON.parse(Buffer.from(header ?? '', 'base64url').toString())).toMatchObject({ alg: 'HS256' });
      const claims = decodeJwt(response.body.token);
      expect(claims.sub).toBe('sandbox-access-key');
      expect(claims.jti).toEqual(expect.any(String));
      expect((claims.exp ?? 0) - (claims.iat ?? 0)).toBe(3600);
    });

    it('5.10: the token lifetime follows config token_ttl_seconds', async () => {
      await h.control.setConfig({ token_ttl_seconds: 120 });
      const response = await h.api('POST', '/partner/v1/authenticate', {
        token: null,
        body: { access_key: 'sandbox-access-key', secret_key: 'sandbox-secret-key' },
      });
      expect(response.body.expires_in).toBe(120);
    });

    it('5.7: a wrong secret key is 401 unauthenticated', async () => {
      const response = await h.api('POST', '/partner/v1/authenticate', {
        token: null,
        body: { access_key: 'sandbox-access-key', secret_key: 'wrong' },
      });
      expect(response.status).toBe(401);
      expect(response.body.error.code).toBe('unauthenticated');
    });

    it('4.1: a missing secret_key is 400 validation_error naming it', async () => {
      const response = await h.api('POST', '/partner/v1/authenticate', {
        token: null,
        body: { access_key: 'sandbox-access-key' },
      });
      expect(response.status).toBe(400);
      expect(response.body.error.code).toBe('validation_error');
      expect(response.body.error.errors).toEqual(['secret_key is required']);
    });

    it('5.2: keys created through the control API authenticate', async () => {
      await h.control.createKey({ access_key: 'partner-a', secret_key: 'secret-a' });
      const token = await h.token('partner-a', 'secret-a');
      expect((await h.api('GET', '/partner/v1/properties', { token })).status).toBe(200);
    });
  });

  describe('when the bearer token is not good', () => {
    it('5.4/5.7: a request without a token is 401 unauthenticated', async () => {
      const response = await h.api('GET', '/partner/v1/applications', { token: null });
      expect(response.status).toBe(401);
      expect(response.body.error.code).toBe('unauthenticated');
    });

    it('5.7: a malformed token is 401 unauthenticated', async () => {
      const response = await h.api('GET', '/partner/v1/applications', { token: 'not-a-jwt' });
      expect(response.status).toBe(401);
      expect(response.body.error.code).toBe('unauthenticated');
    });

    it('5.7: an Authorization header that is not Bearer is 401 unauthenticated', async () => {
      const response = await h.api('GET', '/partner/v1/applications', {
        token: null,
        headers: { authorization: 'Basic abc' },
      });
      expect(response.status).toBe(401);
    });

    it('5.1/5.7: a token signed with another secret (forged) is 401 unauthenticated', async () => {
      const forged = await new SignJWT({})
        .setProtectedHeader({ alg: 'HS256' })
        .setSubject('sandbox-access-key')
        .setExpirationTime('1h')
        .sign(new TextEncoder().encode('not-the-sandbox-secret-not-the-sandbox-secret'));
      const response = await h.api('GET', '/partner/v1/applications', { token: forged });
      expect(response.status).toBe(401);
      expect(response.body.error.code).toBe('unauthenticated');
    });

    it('5.7: an expired token is 401 unauthenticated', async () => {
      await h.control.setConfig({ token_ttl_seconds: 0 });
      const expired = await h.token();
      const response = await h.api('GET', '/partner/v1/applications', { token: expired });
      expect(response.status).toBe(401);
      expect(response.body.error.code).toBe('unauthenticated');
    });

    it('5.7: a revoked key’s tokens are 401 unauthenticated', async () => {
      await h.control.createKey({ access_key: 'partner-b', secret_key: 'secret-b' });
      const token = await h.token('partner-b', 'secret-b');
      await h.control.revokeKey('partner-b');
      const response = await h.api('GET', '/partner/v1/applications', { token });
      expect(response.status).toBe(401);
      expect(response.body.error.code).toBe('unauthenticated');
    });

    it('5.7: a key revoked and created again does not revive its old tokens', async () => {
      await h.control.createKey({ access_key: 'partner-c', secret_key: 'secret-c' });
      const token = await h.token('partner-c', 'secret-c');
      await h.control.revokeKey('partner-c');
      await h.control.createKey({ access_key: 'partner-c', secret_key: 'secret-c' });
      expect((await h.api('GET', '/partner/v1/applications', { token })).status).toBe(401);
    });

    it('5.7: a customer SDK token is not accepted as an API token', async () => {
      const [customer] = await h.control.addRecords('customers', [{ email: 'x@example.com' }]);
      const issued = await h.api('POST', `/partner/v1/customers/${customer?.id}/issue_access_token`);
      const response = await h.api('GET', '/partner/v1/applications', { token: issued.body.token });
      expect(response.status).toBe(401);
    });
  });

  describe('when a key is read-only', () => {
    it('5.8: a write is 403 forbidden and not applied', async () => {
      const [application] = await h.control.addRecords('applications', [{ status: 'submitted' }]);
      await h.control.createKey({ access_key: 'ro', secret_key: 'ro-secret', read_only: true });
      const token = await h.token('ro', 'ro-secret');
      const response = await h.api('POST', `/partner/v1/applications/${application?.id}/approve`, {
        token,
        body: {},
      });
      expect(response.status).toBe(403);
      expect(response.body.error.code).toBe('forbidden');
      const [stored] = await h.control.records('applications');
      expect(stored?.status).toBe('submitted');
    });

    it('5.8: reads are allowed', async () => {
      await h.control.createKey({ access_key: 'ro', secret_key: 'ro-secret', read_only: true });
      const token = await h.token('ro', 'ro-secret');
      expect((await h.api('GET', '/partner/v1/applications', { token })).status).toBe(200);
    });
  });

  describe('when a key is scoped', () => {
    it('5.9: lists show only records of its owners', async () => {
      await h.control.addRecords('properties', [{ owner_id: 1 }, { owner_id: 2 }, { owner_id: 1 }]);
      await h.control.createKey({ access_key: 'owner1', secret_key: 's', owner_ids: [1] });
      const token = await h.token('owner1', 's');
      const response = await h.api('GET', '/partner/v1/properties', { token });
      expect(response.body.items.map((p: { id: number }) => p.id)).toEqual([3, 1]);
      expect(response.body.total_count).toBe(2);
    });

    it('5.9: lists show only records of its property groups', async () => {
      await h.control.addRecords('units', [
        { title: 'a', property_group_id: 'g1' },
        { title: 'b', property_group_id: 'g2' },
      ]);
      await h.control.createKey({ access_key: 'g2key', secret_key: 's', property_group_ids: ['g2'] });
      const token = await h.token('g2key', 's');
      const response = await h.api('GET', '/partner/v1/units', { token });
      expect(response.body.items.map((u: { title: string }) => u.title)).toEqual(['b']);
    });

    it('5.9: a write on a record outside its scope is 404 not_found', async () => {
      const [application] = await h.control.addRecords('applications', [
        { status: 'submitted', owner_id: 2 },
      ]);
      await h.control.createKey({ access_key: 'owner1', secret_key: 's', owner_ids: [1] });
      const token = await h.token('owner1', 's');
      const response = await h.api('POST', `/partner/v1/applications/${application?.id}/approve`, {
        token,
        body: {},
      });
      expect(response.status).toBe(404);
      expect(response.body.error.code).toBe('not_found');
    });

    it('5.9: an item endpoint on a record outside its scope is 404 not_found', async () => {
      const [customer] = await h.control.addRecords('customers', [{ owner_id: 2 }]);
      await h.control.createKey({ access_key: 'owner1', secret_key: 's', owner_ids: [1] });
      const token = await h.token('owner1', 's');
      const response = await h.api('GET', `/partner/v1/customers/${customer?.id}/issues`, { token });
      expect(response.status).toBe(404);
    });

    it('5.9: a key scoped to an empty list of owners sees nothing (it never falls open)', async () => {
      await h.control.addRecords('properties', [{ owner_id: 1 }, { owner_id: 2 }, {}]);
      await h.control.createKey({ access_key: 'none', secret_key: 's', owner_ids: [] });
      const token = await h.token('none', 's');
      const response = await h.api('GET', '/partner/v1/properties', { token });
      expect(response.body.total_count).toBe(0);
    });

    it("5.9: a customer created with a scoped key is its owner's; another owner's key gets 404 on it", async () => {
      await h.control.createKey({ access_key: 'owner1', secret_key: 's', owner_ids: [1] });
      await h.control.createKey({ access_key: 'owner2', secret_key: 's', owner_ids: [2] });
      const one = await h.token('owner1', 's');
      const two = await h.token('owner2', 's');
      const created = await h.api('POST', '/v1/partners/customers', {
        token: one,
        body: { first_name: 'A', last_name: 'B', email: 'a.b@example.test', phone: '5550001111' },
      });
      expect(created.status).toBe(201);
      expect(created.body.owner_id).toBe(1);
      const seen = await h.api('GET', '/partner/v1/customers', { token: two });
      expect(seen.body.total_count).toBe(0);
      const token = await h.api('POST', `/partner/v1/customers/${created.body.id}/issue_access_token`, {
        token: two,
        body: {},
      });
      expect(token.status).toBe(404);
    });
  });

  describe('when enhanced security mode is on', () => {
    it('5.5: a request without X-Access-Token is 401 unauthenticated', async () => {
      const token = await h.token();
      await h.control.setConfig({ enhanced_security: true });
      const response = await h.api('GET', '/partner/v1/applications', { token });
      expect(response.status).toBe(401);
      expect(response.body.error.code).toBe('unauthenticated');
    });

    it('5.5: an X-Access-Token other than the token’s access key is 401 unauthenticated', async () => {
      const token = await h.token();
      await h.control.setConfig({ enhanced_security: true });
      const response = await h.api('GET', '/partner/v1/applications', {
        token,
        headers: { 'x-access-token': 'someone-else' },
      });
      expect(response.status).toBe(401);
    });

    it('5.5: a request with X-Access-Token equal to the access key passes', async () => {
      await h.control.setConfig({ enhanced_security: true });
      const token = await h.token();
      const response = await h.api('GET', '/partner/v1/applications', {
        token,
        headers: { 'x-access-token': 'sandbox-access-key' },
      });
      expect(response.status).toBe(200);
    });
  });
});
