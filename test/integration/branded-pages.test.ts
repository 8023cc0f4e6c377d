// A branded box's pages over HTTP: in the language a browser asks for, with the box's name, logo,
// colours and support link, the logo's origin alone allowed by the Content-Security-Policy; and
// the error pages of a sign-in, each with a way on.
import { expect } from 'chai';
import { LANGUAGES } from '../../api/ui/language.js';
import { Box } from '../support/box.js';
import { strayTexts } from '../support/page-words.js';

const BROWSER = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';

describe('branded pages, in the language asked for, and error pages that lead somewhere', function () {
  this.timeout(60_000);
  let box: Box;

  before(async function () {
    box = await Box.start({
      env: {
        BOXAUTH_BRAND_NAME: 'ACME Corp',
        BOXAUTH_BRAND_LOGO_URL: 'https://cdn.acme.example/brand/logo.png',
        BOXAUTH_BRAND_PRIMARY_COLOR: '#8a1c1c',
        BOXAUTH_BRAND_SUPPORT_URL: 'https://help.acme.example/',
      },
    });
    await box.addAppAtBox();
  });
  after(async function () {
    await box?.stop();
  });

  const get = (path: string, language?: string): Promise<Response> =>
    fetch(`${box.url}${path}`, { redirect: 'manual', headers: { Accept: BROWSER, ...(language ? { 'Accept-Language': language } : {}) } });

  it('says the page in the language asked for (q-values), English otherwise, with lang, Content-Language and Vary', async function () {
    for (const [asked, lang, heading] of [
      [undefined, 'en', 'Sign in'],
      ['de-AT,de;q=0.9,en;q=0.5', 'de', 'Anmelden'],
      ['fr;q=1, en;q=0.2, de;q=0.9', 'de', 'Anmelden'],
      ['fr, it', 'en', 'Sign in'],
    ] as const) {
      const res = await get('/auth/sign-in', asked);
      const text = await res.text();
      expect(res.status).to.equal(200);
      expect(text, String(asked)).to.include(`<html lang="${lang}" dir="ltr">`).and.include(`<h1>${heading}</h1>`);
      expect(res.headers.get('content-language')).to.equal(lang);
      expect(res.headers.get('vary') ?? '').to.match(/Accept-Language/i);
      // What the conformance suite and the tests find by id, name and value stays as it was.
      expect(text).to.include('id="email"').and.include('id="password"').and.include('action="/auth/sign-in"');
    }
  });

  it('shows the name, logo and support link, with the logo’s origin alone in img-src, and serves the colours', async function () {
    const res = await get('/auth/sign-in');
    const text = await res.text();
    expect(text).to.include('<span>ACME Corp</span>').and.include('src="https://cdn.acme.example/brand/logo.png"');
    expect(text).to.include('href="https://help.acme.example/"').and.not.include('boxauth ·');
    expect(res.headers.get('content-security-policy')).to.include("img-src 'self' https://cdn.acme.example;");
    const admin = await get('/admin');
    expect(await admin.text()).to.include('<span>ACME Corp</span> · admin');
    expect(admin.headers.get('content-security-policy')).to.include("img-src 'self' https://cdn.acme.example");
    const css = await fetch(`${box.url}/assets/brand.css`);
    expect(css.headers.get('content-type')).to.match(/^text\/css/);
    expect(await css.text())
      .to.include('--accent: #8a1c1c;')
      .and.not.include('--bg');
  });

  it('says a visitor’s pages and their refusals in German with no sentence from outside the catalogue', async function () {
    const german = LANGUAGES.find((l) => l.tag === 'de')!;
    for (const path of [
      '/auth/sign-in',
      '/auth/reset',
      '/auth/upstream/nobody',
      '/auth/sign-in/second-factor',
      '/auth/logout?state=a&state=b',
      '/auth/logout?id_token_hint=not-a-token',
    ]) {
      const text = await (await get(path, 'de')).text();
      expect(text, path).to.include('<html lang="de"');
      expect(strayTexts(text, german, ['ACME Corp', 'state']), path).to.deep.equal([]);
    }
  });

  it('gives every sign-in error page a way on: sign in again, back to the app, and the support link', async function () {
    const noSuch = await get('/auth/upstream/nobody');
    const noSuchText = await noSuch.text();
    expect(noSuch.status).to.equal(404);
    expect(noSuchText).to.include('No such sign-in').and.include('<a href="/auth/sign-in">Sign in again</a>');
    expect(noSuchText).to.include('href="https://help.acme.example/"');
    const inGerman = await (await get('/auth/upstream/nobody', 'de')).text();
    expect(inGerman).to.include('Diese Anmeldung gibt es nicht').and.include('<a href="/auth/sign-in">Erneut anmelden</a>');

    const noStep = await (await get('/auth/sign-in/second-factor')).text();
    expect(noStep)
      .to.include('This sign-in has ended or was never begun.')
      .and.match(/<a href="\/auth\/sign-in\?return_to=[^"]*">Sign in<\/a>/);

    // An app's sign-in that did not begin in this browser: back to the app, to begin again.
    const callback = await get('/.boxauth/callback?code=whatever&state=forged');
    expect(callback.status).to.equal(400);
    expect(await callback.text())
      .to.include('This sign-in link is not valid')
      .and.include(`<a href="${box.url}/">Back to the app</a>`);
  });
});
