// What a person or a program sees when something is wrong: the database gone
// (503 temporarily_unavailable with Retry-After, never a 500, and back to work
// once it returns), and errors in a browser as pages rather than JSON.
import { expect } from 'chai';
import { Box, basic, eventually } from '../support/box.js';
import { createDatabase } from '../support/postgres.js';
import { TcpProxy } from '../support/tcp-proxy.js';

const BROWSER = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';

describe('failure paths', function () {
  this.timeout(60_000);
  let box: Box;
  let proxy: TcpProxy;

  before(async function () {
    const url = await createDatabase();
    const { hostname, port } = new URL(url);
    proxy = await TcpProxy.start({ host: hostname, port: Number(port) });
    box = await Box.start({ databaseUrl: proxy.through(url) });
  });

  after(async function () {
    await box?.stop();
    await proxy?.cut();
  });

  it('with the database unreachable: 503 temporarily_unavailable and Retry-After, at the OAuth endpoints and the API; then back to work', async function () {
    const root = await box.rootToken();
    await proxy.cut();
    try {
      const token = await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('root', box.rootSecret) });
      expect(token.status, token.text).to.equal(503);
      expect(token.body.error).to.equal('temporarily_unavailable');
      expect(token.headers.get('retry-after')).to.equal('5');
      const users = await box.json('GET', '/users', undefined, root);
      expect(users.status, users.text).to.equal(503);
      expect(users.body.error).to.equal('temporarily_unavailable');
      expect(users.headers.get('retry-after')).to.equal('5');
      const page = await box.request('GET', '/users', { headers: { Accept: BROWSER, Authorization: `Bearer ${root}` } });
      expect(page.status).to.equal(503);
      expect(page.headers.get('content-type')).to.match(/^text\/html/);
      expect(page.text).to.include('Temporarily unavailable').and.include('Try again in 5 seconds');
      await box.logged('the database is unreachable');
    } finally {
      await proxy.restore();
    }
    // The pool reconnects on the next checkout.
    const again = await eventually(
      'a token once the database is back',
      async () => {
        const { status } = await box.form(
          '/auth/token',
          { grant_type: 'client_credentials' },
          { Authorization: basic('root', box.rootSecret) },
        );
        return status === 200 && status;
      },
      5_000,
    );
    expect(again).to.equal(200);
  });

  it('opening / in a browser shows a page with the ways on; a program gets them as JSON', async function () {
    const page = await box.request('GET', '/', { headers: { Accept: BROWSER } });
    expect(page.status).to.equal(200);
    expect(page.headers.get('content-type')).to.match(/^text\/html/);
    expect(page.text).to.include('href="/admin"').and.include('/.well-known/openid-configuration');
    const api = await box.json('GET', '/');
    expect(api.status).to.equal(200);
    expect(api.body).to.deep.include({ issuer: box.url, openapi: `${box.url}/openapi.json` });
  });

  it('an error in a browser is a page; the same request from a program is JSON, as before', async function () {
    const root = await box.rootToken();
    const page = await box.request('GET', '/nowhere', { headers: { Accept: BROWSER, Authorization: `Bearer ${root}` } });
    expect(page.status).to.equal(404);
    expect(page.headers.get('content-type')).to.match(/^text\/html/);
    expect(page.text).to.include('Not found').and.include('no such endpoint');
    expect(page.headers.get('content-security-policy')).to.include("default-src 'none'");
    const unauthenticated = await box.request('GET', '/users', { headers: { Accept: BROWSER } });
    expect(unauthenticated.status).to.equal(401);
    expect(unauthenticated.text).to.include('Sign-in needed');
    const program = await box.json('GET', '/nowhere', undefined, root);
    expect(program.status).to.equal(404);
    expect(program.body.error).to.equal('not_found');
  });
});
