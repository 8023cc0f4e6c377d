// Two real boxes, one the upstream OpenID Provider of the other (issue 38): box B's people
// sign in to box A through B. A browser without JavaScript per box (test/support/form-agent.ts):
// the two are two hosts, whose cookies a browser keeps apart.
import { expect } from 'chai';
import type { Box, JsonResponse } from './box.js';
import { FormAgent, hiddenFields } from './form-agent.js';

/** Registers box A at box B as a first-party OpenID client, and B at A as IdentityProvider `id`. */
export async function connectUpstream(
  a: Box,
  b: Box,
  id: string,
  spec: Record<string, unknown> = {},
  client = `${id}-client`,
): Promise<void> {
  const secret = `upstream-secret-${id}-123`;
  const redirect = `${a.url}/auth/upstream/${id}/callback`;
  let res = await b.json(
    'PUT',
    `/Client/${client}`,
    {
      grant_types: ['authorization_code'],
      secret,
      first_party: true,
      auth: { authorization_code: { redirect_uri: redirect } },
    },
    await b.rootToken(),
  );
  expect(res.status, res.text).to.be.oneOf([200, 201]);
  res = await a.json(
    'PUT',
    `/IdentityProvider/${id}`,
    {
      type: 'oidc',
      // A box puts the claims of the scopes in its userinfo, not its ID tokens (Client.claims_in_id_token).
      oidc: { issuer: b.url, clientId: client, scopes: ['openid', 'email', 'profile', 'groups'], useUserinfo: true },
      secret,
      ...spec,
    },
    await a.rootToken(),
  );
  expect(res.status, res.text).to.be.oneOf([200, 201]);
}

/** A browser visiting both boxes: one cookie jar per host (at A: `atA`'s, one a test holds already). */
export class TwoHostBrowser {
  readonly atB: FormAgent;
  constructor(
    readonly a: Box,
    readonly b: Box,
    readonly atA = new FormAgent(a),
  ) {
    this.atB = new FormAgent(b);
  }

  /** Presses provider `id`'s button on A's sign-in page (back to `returnTo`): the redirect to B, or A's answer. */
  async start(id: string, returnTo = '/auth/signed-in', link = false): Promise<JsonResponse> {
    const page = await this.atA.get(link ? '/auth/account' : `/auth/sign-in?return_to=${encodeURIComponent(returnTo)}`);
    const fields = hiddenFields(page.text);
    const form: Record<string, string> = link ? { csrf: fields.csrf!, link: '1' } : { csrf: fields.csrf!, return_to: returnTo };
    return this.atA.post(`/auth/upstream/${id}/start`, form);
  }

  /** At B, from A's redirect: signs in there (when not yet) and comes back with B's redirect to A's callback. */
  async atUpstream(toB: JsonResponse, email: string, password: string): Promise<string> {
    expect(toB.status, toB.text).to.equal(303);
    const authorize = new URL(toB.headers.get('location')!);
    expect(authorize.origin).to.equal(new URL(this.b.url).origin);
    let res = await this.atB.get(authorize.pathname + authorize.search);
    if (res.status === 200) {
      const signedIn = await this.atB.post('/auth/sign-in', { ...hiddenFields(res.text), email, password });
      expect(signedIn.status, signedIn.text).to.equal(303);
      res = await this.atB.get(signedIn.headers.get('location')!);
    }
    expect(res.status, res.text).to.equal(302);
    return res.headers.get('location')!;
  }

  /** Delivers B's callback at A: A's answer. */
  callback(location: string): Promise<JsonResponse> {
    const url = new URL(location);
    return this.atA.get(url.pathname + url.search);
  }

  /** The whole way: A's answer to the callback. */
  async signIn(id: string, email: string, password: string, returnTo = '/auth/signed-in'): Promise<JsonResponse> {
    return this.callback(await this.atUpstream(await this.start(id, returnTo), email, password));
  }
}
