// The OpenAPI document (api/schema/openapi.ts) as a validator no one here wrote
// sees it, and against the routes the code declares: a new endpoint without a
// description fails here.
import { Validator } from '@seriousme/openapi-schema-validator';
import { expect } from 'chai';
import fs from 'node:fs';
import path from 'node:path';
import { projectPath } from '../../../api/paths.js';
import { openApiDocument } from '../../../api/schema/openapi.js';

/** Pages for people's browsers, and their assets: not part of the API a program calls. */
const BROWSER_PAGES = new Set([
  '/auth/sign-in',
  '/auth/sign-up',
  '/auth/sign-out',
  '/auth/signed-in',
  '/auth/consent',
  '/auth/device/verify',
  '/admin',
  '/admin/callback',
  '/assets/${name}', // each module of api/ui/browser/
  '/assets/brand.css', // the box's colours (api/branding.ts)
  '/favicon.ico',
  // Second factors and passkeys: pages, their forms, and the JSON the pages' own script calls.
  '/auth/sign-in/second-factor',
  '/auth/sign-in/enrol',
  '/auth/sign-in/continue',
  '/account',
  '/auth/account',
  '/auth/account/totp',
  '/auth/account/totp/confirm',
  '/auth/account/recovery-codes',
  '/auth/account/factors/remove',
  // A way back in: the reset and verification pages, and the account page's forms.
  '/auth/reset',
  '/auth/reset/confirm',
  '/auth/verify-email',
  '/auth/account/password',
  '/auth/account/email',
  '/auth/account/sign-ins/end',
  '/auth/account/grants/end',
  '/auth/account/consents/withdraw',
  '${ACCOUNT_PAGE}/remove',
  '/auth/passkeys/authenticate/options',
  '/auth/passkeys/authenticate',
  '/auth/passkeys/register/options',
  '/auth/passkeys/register',
  '/assets/simplewebauthn-browser.js',
  // Upstream providers: a sign-in's start, its callback, a directory's form; the account page's unlink.
  '/auth/upstream/{id}/start',
  '/auth/upstream/{id}/callback',
  '/auth/upstream/{id}',
  '/auth/account/providers/unlink',
]);

/** Every path a route of api/http declares (express paths as OpenAPI's), and the node:http OAuth endpoints. */
function declaredPaths(): string[] {
  const dir = projectPath('api', 'http');
  const files = fs.readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));
  const found = new Set<string>();
  for (const file of files) {
    const source = fs.readFileSync(path.join(dir, file), 'utf8');
    for (const m of source.matchAll(/(?:router|app)\.(?:get|post|put|delete|all)\(\s*(\[[^\]]*\]|'[^']*'|`[^`]*`)/g)) {
      for (const p of m[1]!.matchAll(/['`]([^'`]+)['`]/g)) found.add(p[1]!);
    }
    for (const m of source.matchAll(/\[\s*'(\/auth\/[a-z]+)'/g)) found.add(m[1]!); // the OAuth endpoints table
  }
  return [...found]
    .flatMap((p) =>
      p.includes('${kind}') ? ['Client', 'AccessPolicy', 'App', 'IdentityProvider'].map((k) => p.replace('${kind}', k)) : [p],
    )
    .map((p) => p.replace(/:([a-z]+)/g, '{$1}'))
    .filter((p) => !BROWSER_PAGES.has(p));
}

describe('the OpenAPI document', function () {
  const doc = openApiDocument('http://localhost:8080', '0.0.0-test');

  it('is valid OpenAPI 3.1 (@seriousme/openapi-schema-validator), every $ref resolving', async function () {
    const validator = new Validator();
    const result = await validator.validate(structuredClone(doc));
    expect(result.valid, JSON.stringify(result.errors, null, 1)).to.equal(true);
    expect(validator.version).to.equal('3.1');
    expect(() => validator.resolveRefs()).not.to.throw();
  });

  it('describes every path the box serves to programs', function () {
    const paths = Object.keys(doc.paths as object);
    const declared = declaredPaths();
    expect(declared.length).to.be.greaterThan(20);
    expect(declared.filter((p) => !paths.includes(p))).to.deep.equal([]);
    expect(paths).to.include('/authz/http/{app}/{path}'); // Envoy's door: a route by regular expression (gate-endpoints.ts)
  });

  it('takes resource bodies from the CRD schemas that validate them', function () {
    const schemas = (doc.components as { schemas: Record<string, { properties: Record<string, unknown> }> }).schemas;
    expect(schemas.ClientBody!.properties).to.have.keys([...Object.keys(schemas.ClientBody!.properties)]);
    expect(schemas.ClientBody!.properties).to.include.keys('grant_types', 'auth', 'secret', 'post_logout_redirect_uris');
    expect(schemas.Client!.properties).not.to.have.property('secret'); // write-only: never shown
    expect(schemas.AccessPolicyBody!.properties).to.include.keys('engine', 'matcho', 'schema', 'app', 'dryRun');
    // An identity provider's secret is the REST API's own (secretRef is Kubernetes'), written and never read.
    expect(schemas.IdentityProviderBody!.properties).to.include.keys('type', 'oidc', 'ldap', 'linking', 'groups', 'secret');
    expect(schemas.IdentityProviderBody!.properties).not.to.have.property('secretRef');
    expect(schemas.IdentityProvider!.properties).not.to.have.property('secret');
  });
});
