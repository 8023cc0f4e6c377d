// The OpenAPI document (api/schema/openapi.ts) as a validator no one here wrote
// sees it, and against the routes the code declares: a new endpoint without a
// description fails here.
import { Validator } from '@seriousme/openapi-schema-validator';
import { expect } from 'chai';
import fs from 'node:fs';
import path from 'node:path';
import { createRequestListener } from '../../../api/http/app.js';
import { browserPages } from '../../../api/http/browser-pages.js';
import { projectPath } from '../../../api/paths.js';
import { RESOURCE_KINDS } from '../../../api/record-kinds.js';
import { openApiDocument } from '../../../api/schema/openapi.js';
import { servicesForBuilding } from '../../support/services-for-building.js';

/** A path a route of api/http declares, and whether the route marks it as a page of people's browsers. */
interface Declared {
  path: string;
  marked: boolean;
}

/** Every path a route of api/http declares (express paths as OpenAPI's), and the node:http OAuth endpoints. */
function declaredRoutes(): Declared[] {
  const dir = projectPath('api', 'http');
  const files = fs.readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));
  const found = new Map<string, Declared>();
  const add = (path: string, marked: boolean): void => void found.set(`${marked} ${path}`, { path, marked });
  for (const file of files) {
    const source = fs.readFileSync(path.join(dir, file), 'utf8');
    const route = /(?:router|app)\.(?:get|post|put|delete|all)\(\s*(\[[^\]]*\]|'[^']*'|`[^`]*`|browserPage\((?:'[^']*'|`[^`]*`)\))/g;
    for (const m of source.matchAll(route)) {
      for (const p of m[1]!.matchAll(/(browserPage\()?['`]([^'`]+)['`]/g)) add(p[2]!, p[1] !== undefined);
    }
    for (const m of source.matchAll(/\[\s*'(\/auth\/[a-z]+)'/g)) add(m[1]!, false); // the OAuth endpoints table
  }
  return [...found.values()]
    .flatMap((d) => (d.path.includes('${kind}') ? RESOURCE_KINDS.map((k) => ({ ...d, path: d.path.replace('${kind}', k) })) : [d]))
    .map((d) => ({ ...d, path: asOpenApiPath(d.path) }));
}

/** An express path as OpenAPI writes it: `/auth/upstream/:id` → `/auth/upstream/{id}`. */
const asOpenApiPath = (p: string): string => p.replace(/:([a-z]+)/g, '{$1}');

/**
 * The paths the routes mark as pages of people's browsers (api/http/browser-pages.ts), once every
 * router of the box is built, as the box builds them (no request is made).
 */
function markedPages(): string[] {
  createRequestListener(servicesForBuilding(), { draining: () => false, migrationsDone: async () => true });
  return [...browserPages()].map(asOpenApiPath);
}

/** Whether a path the source declares is one of `pages`; `${…}` in a template stands for any text. */
function isPage(declared: string, pages: string[]): boolean {
  if (!declared.includes('${')) return pages.includes(declared);
  const pattern = new RegExp(
    `^${declared
      .split(/\$\{[^}]*\}/)
      .map((piece) => piece.replace(/[.*+?^$()|[\]\\{}]/g, '\\$&'))
      .join('.+')}$`,
  );
  return pages.some((page) => pattern.test(page));
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
    const pages = markedPages();
    const programs = declaredRoutes().filter((d) => !isPage(d.path, pages));
    expect(programs.length).to.be.greaterThan(20);
    expect(programs.filter((d) => !paths.includes(d.path)).map((d) => d.path)).to.deep.equal([]);
    expect(paths).to.include('/authz/http/{app}/{path}'); // Envoy's door: a route by regular expression (gate-endpoints.ts)
  });

  it("leaves out the pages of people's browsers, as their routes mark them", function () {
    const paths = Object.keys(doc.paths as object);
    const pages = markedPages();
    const declared = declaredRoutes();
    expect(pages).to.include.members(['/auth/sign-in', '/auth/account', '/admin', '/.boxauth/start']);
    expect(
      pages.filter((p) => paths.includes(p)),
      'marked with browserPage, yet described',
    ).to.deep.equal([]);
    // Every route of a page marks it (a GET and a POST of one path alike), and every mark was made.
    const unmarked = declared.filter((d) => !d.marked && !paths.includes(d.path));
    expect(
      unmarked.map((d) => d.path),
      'declared without browserPage, and not described',
    ).to.deep.equal([]);
    const notMade = declared.filter((d) => d.marked && !isPage(d.path, pages));
    expect(
      notMade.map((d) => d.path),
      'marked in the source, yet not registered by the built routers',
    ).to.deep.equal([]);
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
