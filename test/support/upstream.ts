// Two real boxes, one the upstream OpenID Provider of the other (issue 38): box B's people
// sign in to box A through B. A browser without JavaScript per box (test/support/form-agent.ts):
// the two are two hosts, whose cookies a browser keeps apart.
import { expect } from 'chai';
import { createHash, randomBytes } from 'node:crypto';
import { basic, type Box, type JsonResponse } from './box.js';
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

/** A first-party client of `box` whose ID tokens carry the claims (email, groups) a test reads. */
export const RP = { redirect: 'https://rp.example/callback', secret: 'rp-secret-123' };

export async function relyingParty(box: Box, id: string, more: Record<string, unknown> = {}): Promise<void> {
  const body = {
    grant_types: ['authorization_code'],
    secret: RP.secret,
    first_party: true,
    claims_in_id_token: true,
    auth: { authorization_code: { redirect_uri: RP.redirect } },
    ...more,
  };
  const res = await box.json('PUT', `/Client/${id}`, body, await box.rootToken());
  expect(res.status, res.text).to.be.oneOf([200, 201]);
}

/** An ID token `client` gets through the browser signed in at `box` (its claims and size); undefined when the browser is not let through. */
export async function idTokenIfAllowed(
  box: Box,
  browser: FormAgent,
  client: string,
  extra: Record<string, string> = {},
): Promise<{ claims: Record<string, any>; bytes: number } | undefined> {
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  const query = { response_type: 'code', client_id: client, redirect_uri: RP.redirect, scope: 'openid email groups', state: 's', ...extra };
  const res = await browser.get(
    `/auth/authorize?${new URLSearchParams({ ...query, code_challenge: challenge, code_challenge_method: 'S256' })}`,
  );
  if (res.status !== 302 || !res.headers.get('location')!.startsWith(RP.redirect)) return undefined;
  const code = new URL(res.headers.get('location')!).searchParams.get('code')!;
  const tokens = await box.form(
    '/auth/token',
    { grant_type: 'authorization_code', code, redirect_uri: RP.redirect, code_verifier: verifier },
    { Authorization: basic(client, RP.secret) },
  );
  expect(tokens.status, tokens.text).to.equal(200);
  const token = tokens.body.id_token as string;
  return { claims: JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()), bytes: token.length };
}

/** The claims of an ID token `client` gets through the browser signed in at `box`, and its size. */
export async function idTokenOf(box: Box, browser: FormAgent, client: string): Promise<{ claims: Record<string, any>; bytes: number }> {
  const token = await idTokenIfAllowed(box, browser, client);
  expect(token, `${client} got no code: the browser was not let through`).to.not.equal(undefined);
  return token!;
}
