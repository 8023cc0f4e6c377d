// The services of docs/guides/tokens-between-services.md's worked example: web passes
// its users' tokens on to orders, which passes them on to payments, each hop an
// RFC 8693 exchange allowed by an AccessPolicy linked to the exchanging client.
// Shared by the token exchange tests of every client library.
import { expect } from 'chai';
import { basic, type Box } from './box.js';

export const EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
export const ACCESS_TOKEN = 'urn:ietf:params:oauth:token-type:access_token';
export const JWT = 'urn:ietf:params:oauth:token-type:jwt';
export const ORDERS = 'https://orders.example';
export const PAYMENTS = 'https://payments.example';

/** A client that may exchange tokens for orders and payments (JWTs, so a test can read `act`). */
export const exchangingClient: Record<string, unknown> = {
  grant_types: ['client_credentials', EXCHANGE],
  audience: [ORDERS, PAYMENTS],
  scope: ['orders:read', 'orders:write', 'payments:charge', 'openid'],
  auth: {
    token_exchange: { token_format: 'jwt', access_token_expiration: 600 },
    client_credentials: { token_format: 'jwt', access_token_expiration: 300 },
  },
};

/** A matcho AccessPolicy `id` linked to `client`, allowing the exchanges that match `matcho`. */
export async function allowExchange(box: Box, root: string, id: string, client: string, matcho: Record<string, unknown>): Promise<void> {
  const res = await box.json(
    'PUT',
    `/AccessPolicy/${id}`,
    { engine: 'matcho', link: [{ id: client, resourceType: 'Client' }], matcho },
    root,
  );
  expect(res.status, res.text).to.be.oneOf([200, 201]);
}

/** The two policies of the chain: web may pass its users on to orders, acting itself; orders to payments, for tokens meant for orders. */
export async function allowChain(box: Box, root: string): Promise<void> {
  await allowExchange(box, root, 'web-to-orders', 'web', {
    exchange: {
      delegation: true,
      audience: ORDERS,
      actor: { kind: 'box', client_id: 'web' },
      subject: { kind: 'box', client_id: 'web' },
    },
  });
  await allowExchange(box, root, 'orders-to-payments', 'orders', {
    exchange: { delegation: true, audience: PAYMENTS, actor: { client_id: 'orders' }, subject: { aud: ORDERS } },
  });
}

/** RFC 7662 introspection of `token` by the root client. */
export async function introspect(box: Box, token: string): Promise<Record<string, unknown>> {
  return (await box.form('/auth/introspect', { token }, { Authorization: basic('root', box.rootSecret) })).body;
}
