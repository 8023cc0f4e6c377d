// response_mode=form_post in a real headless Chromium: the page the box answers with posts the code
// to the client's callback by itself, its one inline script allowed by the page's
// Content-Security-Policy (a refused script would leave the person on the page); with scripts
// off, its Continue button posts the same. The callback is a real server that records the post.
import { expect } from 'chai';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, BrowserContext, ConsoleMessage } from 'playwright-core';
import { Box, basic } from '../support/box.js';
import { launchBrowser, screenshot } from '../support/browser.js';
import { startAll } from '../support/start-all.js';

const ANN = { email: 'ann@example.com', password: 'ann-password-1' };
const SECRET = 'rp-secret-123';

describe('response_mode=form_post (Chromium)', function () {
  this.timeout(60_000);
  let box: Box;
  let browser: Browser;
  let callbackServer: Server;
  let callback: string;
  /** The bodies posted to the callback, in order. */
  const posted: URLSearchParams[] = [];

  before(async function () {
    callbackServer = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        if (req.method === 'POST' && req.headers['content-type'] === 'application/x-www-form-urlencoded')
          posted.push(new URLSearchParams(body));
        res.writeHead(200, { 'Content-Type': 'text/html' }).end('<!doctype html><title>received</title><p id="received">received</p>');
      });
    });
    await new Promise<void>((resolve) => callbackServer.listen(0, '127.0.0.1', resolve));
    callback = `http://127.0.0.1:${(callbackServer.address() as AddressInfo).port}/cb`;
    [box, browser] = await startAll([Box.start(), launchBrowser()]);
    const root = await box.rootToken();
    expect((await box.json('POST', '/users', ANN, root)).status).to.equal(201);
    const client = {
      grant_types: ['authorization_code'],
      first_party: true,
      secret: SECRET,
      auth: { authorization_code: { redirect_uri: callback } },
    };
    expect((await box.json('PUT', '/Client/web', client, root)).status).to.equal(201);
  });
  after(async function () {
    await browser?.close();
    await box?.stop();
    await new Promise((resolve) => callbackServer?.close(resolve));
  });

  /** Signs Ann in on the page an authorization request with form_post shows, in `context`; returns what the browser's console said. */
  async function signInAndAnswer(
    context: BrowserContext,
    state: string,
  ): Promise<{ console: string[]; page: import('playwright-core').Page }> {
    const page = await context.newPage();
    const said: string[] = [];
    page.on('console', (m: ConsoleMessage) => said.push(m.text()));
    await page.goto(
      `${box.url}/auth/authorize?${new URLSearchParams({ response_type: 'code', client_id: 'web', redirect_uri: callback, state, response_mode: 'form_post' })}`,
    );
    await page.getByLabel('Email').fill(ANN.email);
    await page.getByLabel('Password').fill(ANN.password);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    return { console: said, page };
  }

  async function exchanges(code: string): Promise<boolean> {
    const res = await box.form(
      '/auth/token',
      { grant_type: 'authorization_code', code, redirect_uri: callback },
      { Authorization: basic('web', SECRET) },
    );
    return res.status === 200 && typeof res.body.access_token === 'string';
  }

  it('the page posts code, state and iss to the callback by itself, no script refused on the way', async function () {
    const context = await browser.newContext();
    const { console, page } = await signInAndAnswer(context, 'with-scripts');
    await page.waitForURL(callback);
    await page.locator('#received').waitFor();
    const answer = posted.at(-1)!;
    expect(Object.fromEntries(answer)).to.include({ state: 'with-scripts', iss: box.url });
    expect(await exchanges(answer.get('code')!)).to.equal(true);
    expect(console.filter((line) => /Content Security Policy|Refused/i.test(line))).to.deep.equal([]);
    await context.close();
  });

  it('without scripts, the Continue button posts the same', async function () {
    const context = await browser.newContext({ javaScriptEnabled: false });
    const { page } = await signInAndAnswer(context, 'without-scripts');
    await page.getByRole('heading', { name: 'Back to the application' }).waitFor();
    await screenshot(page, 'form-post-without-scripts');
    const before = posted.length;
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.waitForURL(callback);
    expect(posted.length).to.equal(before + 1);
    const answer = posted.at(-1)!;
    expect(Object.fromEntries(answer)).to.include({ state: 'without-scripts', iss: box.url });
    expect(await exchanges(answer.get('code')!)).to.equal(true);
    await context.close();
  });
});
