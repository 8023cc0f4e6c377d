// What the token exchange tests (RFC 8693) share: its identifiers, a policy that
// lets a client exchange, and introspection as the root client sees a token.
import { expect } from 'chai';
import { basic, type Box } from './box.js';

export const EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
export const ACCESS_TOKEN = 'urn:ietf:params:oauth:token-type:access_token';
export const JWT = 'urn:ietf:params:oauth:token-type:jwt';

/** A policy `id` linked to `client` that allows the exchanges matching `matcho`. */
export async function allowExchange(box: Box, root: string, id: string, client: string, matcho: Record<string, unknown>): Promise<void> {
  const res = await box.json(
    'PUT',
    `/AccessPolicy/${id}`,
    { engine: 'matcho', link: [{ id: client, resourceType: 'Client' }], matcho },
    root,
  );
  expect(res.status, res.text).to.be.oneOf([200, 201]);
}

/** RFC 7662 introspection of `token` by the root client. */
export async function introspect(box: Box, token: string): Promise<Record<string, unknown>> {
  return (await box.form('/auth/introspect', { token }, { Authorization: basic('root', box.rootSecret) })).body;
}
