// A box's branding (api/branding.ts): every value checked where it is written, and what reaches
// a page's CSS and Content-Security-Policy.
import { Ajv } from 'ajv';
import { expect } from 'chai';
import { readCrdSchema, toJsonSchema } from '../../api/schema/resources.js';
import { brandingProblems, brandStylesheet, contrastRatio, logoSource, NO_BRANDING, type Branding } from '../../api/branding.js';
import { ConfigError, loadConfig } from '../../api/config.js';
import { pageHeaders } from '../../api/http/pages.js';
import { ENGLISH } from '../../api/ui/language.js';
import { signInPage } from '../../api/ui/pages.js';

const ACME: Branding = {
  displayName: 'ACME Corp',
  logoUrl: 'https://cdn.acme.example/logo.svg',
  primaryColor: '#8a1c1c',
  backgroundColor: '#f4efe6',
  supportUrl: 'https://help.acme.example/sign-in',
};

describe('branding', function () {
  it('reads BOXAUTH_BRAND_* into the config', function () {
    const c = loadConfig({
      BOXAUTH_BRAND_NAME: 'ACME Corp',
      BOXAUTH_BRAND_LOGO_URL: 'https://cdn.acme.example/logo.svg',
      BOXAUTH_BRAND_PRIMARY_COLOR: '#8a1c1c',
      BOXAUTH_BRAND_BACKGROUND_COLOR: '#f4efe6',
      BOXAUTH_BRAND_SUPPORT_URL: 'https://help.acme.example/sign-in',
    });
    expect(c.branding).to.deep.equal(ACME);
    expect(loadConfig({}).branding).to.deep.equal(NO_BRANDING);
  });

  it('refuses a bad value at start, naming its variable', function () {
    const refused: Record<string, string[]> = {
      BOXAUTH_BRAND_NAME: [' ACME', 'A'.repeat(65), 'ACME\u202e', 'AC\nME'],
      BOXAUTH_BRAND_LOGO_URL: [
        'http://cdn.acme.example/logo.png',
        'javascript:alert(1)',
        'https://user:pw@cdn.acme.example/logo.png',
        'logo.png',
        'data:text/html;base64,PHNjcmlwdD4=',
        `data:image/png;base64,${'A'.repeat(40000)}`,
        // Hosts WHATWG URL takes whose origin would widen img-src: every host, or a directive of its own.
        'https://*/logo.png',
        'https://*.acme.example/logo.png',
        'https://cdn.acme.example;img-src/logo.png',
        'https://cdn%3Bacme.example/logo.png',
        "https://'unsafe-inline'/logo.png",
        'https://a,b.example/logo.png',
      ],
      BOXAUTH_BRAND_PRIMARY_COLOR: ['red', '#fff', '#ffffff', 'red;}body{display:none', '#8a1c1c;x'],
      BOXAUTH_BRAND_BACKGROUND_COLOR: ['url(https://x)', '#12345g'],
      BOXAUTH_BRAND_SUPPORT_URL: ['ftp://help.acme.example', 'http://help.acme.example', 'mailto:', '"><script>'],
    };
    for (const [name, values] of Object.entries(refused))
      for (const value of values) expect(() => loadConfig({ [name]: value }), `${name}=${value}`).to.throw(ConfigError, name);
  });

  it('takes https, http on loopback only, a bounded data: logo and a mailto: support address', function () {
    const ok = (b: Partial<Branding>): object => brandingProblems({ ...NO_BRANDING, ...b });
    expect(ok({ logoUrl: 'http://localhost:8080/logo.png', supportUrl: 'http://127.0.0.1/help' })).to.deep.equal({});
    expect(ok({ logoUrl: 'data:image/png;base64,iVBORw0KGgo=', supportUrl: 'mailto:help@acme.example' })).to.deep.equal({});
    expect(ok({ primaryColor: '#0b5cad' })).to.deep.equal({});
    expect(ok({ logoUrl: 'https://xn--bcher-kva.example:8443/logo.png', supportUrl: 'https://[2001:db8::1]/help' })).to.deep.equal({});
    expect(ok({ logoUrl: 'https://bücher.example/logo.png', supportUrl: 'https://192.0.2.7/help' })).to.deep.equal({});
    expect(contrastRatio('#000000', '#ffffff')).to.be.closeTo(21, 0.01);
  });

  it('puts only checked colours in the stylesheet, and only the logo’s origin in img-src', function () {
    expect(brandStylesheet(ACME)).to.include('--accent: #8a1c1c;').and.include('--bg: #f4efe6;');
    expect(brandStylesheet({ primaryColor: 'red;}*{x:y', backgroundColor: undefined })).not.to.include('red');
    expect(logoSource(ACME)).to.equal('https://cdn.acme.example');
    expect(logoSource({ logoUrl: 'data:image/png;base64,AAAA' })).to.equal('data:');
    expect(pageHeaders(ACME)['Content-Security-Policy']).to.include("img-src 'self' https://cdn.acme.example;");
    expect(pageHeaders(ACME, { script: true })['Content-Security-Policy']).to.include("script-src 'self'");
    expect(pageHeaders(NO_BRANDING)['Content-Security-Policy']).to.include("img-src 'self';");
    // The form_post page's one inline script, by its hash, beside the logo's origin.
    for (const branding of [ACME, NO_BRANDING]) {
      const csp = pageHeaders(branding, { inlineScript: "'sha256-abc='" })['Content-Security-Policy'];
      expect(csp).to.include("script-src 'sha256-abc=';").and.not.include("script-src 'none'").and.not.include('connect-src');
      expect(csp).to.include(branding === ACME ? "img-src 'self' https://cdn.acme.example;" : "img-src 'self';");
    }
  });

  it('shows the name, the logo and the support link on a page, escaped', function () {
    const shown = { box: 'default', csrf: 'c', returnTo: '/', registration: false, providers: [], own: true, usernames: false };
    const page = signInPage(shown)({ branding: { ...ACME, displayName: 'A&B <Corp>' }, language: ENGLISH });
    expect(page).to.include('<span>A&amp;B &lt;Corp&gt;</span>').and.not.include('boxauth ·');
    expect(page).to.include('<img class="logo" src="https://cdn.acme.example/logo.svg" alt=""');
    expect(page).to.include('<a href="https://help.acme.example/sign-in">Need help? Contact support</a>');
    expect(page).to.include('<link rel="stylesheet" href="/assets/brand.css">');
    expect(page).to.include('<title>Sign in · A&amp;B &lt;Corp&gt;</title>');
    const plain = signInPage(shown)({ branding: NO_BRANDING, language: ENGLISH });
    expect(plain).to.include('boxauth · <span>default</span>').and.not.include('brand.css');
  });

  it('is refused by the Box schema where it is written: what the box would refuse at start, but for the contrast', function () {
    const spec = readCrdSchema('Box').spec as { properties: Record<string, unknown> };
    const valid = new Ajv({ strict: false }).compile(toJsonSchema(spec.properties.branding) as object);
    expect(valid({ ...ACME, logoUrl: 'data:image/png;base64,iVBORw0KGgo=' }), JSON.stringify(valid.errors)).to.equal(true);
    expect(valid(ACME), JSON.stringify(valid.errors)).to.equal(true);
    for (const bad of [
      { displayName: '' },
      { displayName: ' ACME' },
      { displayName: 'A'.repeat(65) },
      { logoUrl: 'http://cdn.acme.example/logo.png' },
      { logoUrl: 'javascript:alert(1)' },
      { logoUrl: 'data:text/html;base64,PHNjcmlwdD4=' },
      { logoUrl: 'https://user@cdn.acme.example/logo.png' },
      { logoUrl: 'https://*/logo.png' },
      { logoUrl: 'https://*.acme.example/logo.png' },
      { logoUrl: 'https://cdn.acme.example;img-src/logo.png' },
      { logoUrl: 'https://cdn%3Bacme.example/logo.png' },
      { supportUrl: 'https://*.acme.example/help' },
      { primaryColor: 'red' },
      { primaryColor: '#8a1c1c;}' },
      { backgroundColor: 'url(x)' },
      { supportUrl: 'http://help.acme.example' },
      { supportUrl: '"><script>' },
      { favicon: 'https://acme.example/favicon.ico' },
    ]) {
      expect(valid(bad), JSON.stringify(bad)).to.equal(false);
      const field = Object.keys(bad)[0]!;
      if (field !== 'favicon') expect(brandingProblems({ ...NO_BRANDING, ...bad }), JSON.stringify(bad)).to.have.property(field);
    }
  });
});
