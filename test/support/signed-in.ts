// A person signed in at a first-party app of the code flow: their browser, and the access and
// refresh tokens the app obtained with it. What tests of ending a person's sessions check ended.
import { expect } from 'chai';
import { basic, type Box } from './box.js';
import { FormAgent } from './form-agent.js';

export const APP_REDIRECT = 'https://app.example/cb';

export interface SignedIn {
  browser: FormAgent;
  accessToken: string;
  refreshToken: string;
}

/** The authorization request of `client`: a signed-in browser gets a code (302), any other the sign-in page. */
export const authorizePath = (client = 'app'): string =>
  `/auth/authorize?${new URLSearchParams({ response_type: 'code', client_id: client, redirect_uri: APP_REDIRECT })}`;

/** Signs `email` in at the sign-in page; then `client` (secret `${client}-secret-123`) obtains a grant through that browser. */
export async function signedInAt(box: Box, email: string, password: string, client = 'app'): Promise<SignedIn> {
  const browser = new FormAgent(box);
  expect((await browser.signIn(email, password)).status, `sign-in of ${email}`).to.equal(303);
  return { browser, ...(await grantThrough(box, browser, client)) };
}

/** The access and refresh tokens `client` (secret `${client}-secret-123`) obtains through `browser`, signed in already. */
export async function grantThrough(box: Box, browser: FormAgent, client = 'app'): Promise<Omit<SignedIn, 'browser'>> {
  const authorized = await browser.get(authorizePath(client));
  expect(authorized.status, authorized.text).to.equal(302);
  const code = new URL(authorized.headers.get('location')!).searchParams.get('code')!;
  const granted = await box.form(
    '/auth/token',
    { grant_type: 'authorization_code', code, redirect_uri: APP_REDIRECT },
    { Authorization: basic(client, `${client}-secret-123`) },
  );
  expect(granted.status, granted.text).to.equal(200);
  return { accessToken: granted.body.access_token, refreshToken: granted.body.refresh_token };
}
