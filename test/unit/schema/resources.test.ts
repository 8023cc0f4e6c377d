import { expect } from 'chai';
import fs from 'node:fs';
import { parseAllDocuments } from 'yaml';
import { projectPath } from '../../../api/paths.js';
import { CEL_TWINS, readCrdSchema, toJsonSchema, validateResource } from '../../../api/schema/resources.js';
import { ValidationError } from '../../../api/errors.js';

function errorsOf(kind: 'Client' | 'AccessPolicy', body: unknown): Record<string, string[]> | undefined {
  try {
    validateResource(kind, body);
    return undefined;
  } catch (err) {
    expect(err).to.be.instanceOf(ValidationError);
    return (err as ValidationError).errors;
  }
}

describe('resource schemas from crds/', function () {
  it('every CEL rule in a CRD has a JavaScript twin (the REST API enforces the same rules)', function () {
    for (const kind of ['Client', 'AccessPolicy', 'IdentityProvider'] as const) {
      const { rules } = readCrdSchema(kind);
      expect(rules.length).to.be.greaterThan(0);
      for (const rule of rules) expect(CEL_TWINS, `no twin for ${kind} rule ${rule.rule}`).to.have.property(rule.rule);
    }
  });

  it('every CRD schema is one the API server takes: no object with both properties and additionalProperties', function () {
    // Kubernetes refuses such a CRD ("additionalProperties and properties are mutual exclusive"): the
    // kind would not install. Closing objects is the REST API's work (toJsonSchema), not the CRD's.
    const both: string[] = [];
    const walk = (node: unknown, at: string): void => {
      if (!node || typeof node !== 'object') return;
      const n = node as Record<string, unknown>;
      if ('properties' in n && 'additionalProperties' in n) both.push(at);
      for (const [key, value] of Object.entries(n)) walk(value, `${at}.${key}`);
    };
    for (const file of fs.readdirSync(projectPath('crds')).filter((f) => f.endsWith('.yaml'))) {
      for (const doc of parseAllDocuments(fs.readFileSync(projectPath('crds', file), 'utf8'))) walk(doc.toJS(), file);
    }
    expect(both).to.deep.equal([]);
  });

  it('turns structural schemas into closed JSON Schemas without Kubernetes keywords', function () {
    const schema = toJsonSchema({
      type: 'object',
      properties: { a: { type: 'string', default: 'x' }, p: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } },
    }) as any;
    expect(schema.additionalProperties).to.equal(false);
    expect(schema.properties.a).to.deep.equal({ type: 'string' });
    expect(schema.properties.p).to.deep.equal({ type: 'object' });
  });

  it("accepts the spec's Client shapes", function () {
    expect(
      errorsOf('Client', {
        id: 'a',
        resourceType: 'Client',
        secret: 'long-enough',
        grant_types: ['client_credentials'],
        auth: {
          client_credentials: { token_format: 'jwt', access_token_expiration: 60, refresh_token: true, refresh_token_expiration: 600 },
        },
      }),
    ).to.equal(undefined);
    expect(
      errorsOf('Client', { id: 'b', grant_types: ['implicit'], auth: { implicit: { redirect_uri: 'https://x.example/cb' } } }),
    ).to.equal(undefined);
  });

  it('names each bad field', function () {
    expect(errorsOf('Client', { id: 'a', grant_types: [] })).to.have.key('grant_types');
    expect(errorsOf('Client', { id: 'a b', grant_types: ['implicit'], auth: { implicit: { redirect_uri: 'not a uri' } } })).to.have.keys(
      'id',
      'auth.implicit.redirect_uri',
    );
    expect(errorsOf('Client', { id: 'a', grant_types: ['client_credentials'], secret: 'short' })).to.have.key('secret');
    expect(errorsOf('Client', { id: 'a', grant_types: ['client_credentials'], secretRef: { name: 'k8s-only' } })).to.have.key('secretRef');
    expect(
      errorsOf('Client', {
        id: 'a',
        grant_types: ['implicit'],
        generateSecret: false,
        auth: { implicit: { redirect_uri: 'https://x.example/cb' } },
      }),
    ).to.have.key('generateSecret');
    expect(errorsOf('AccessPolicy', { id: 'p', engine: 'matcho' })).to.deep.equal({ matcho: ['engine matcho needs a matcho pattern'] });
    expect(errorsOf('AccessPolicy', { id: 'p', engine: 'allow', resourceType: 'Client' })).to.have.key('resourceType');
  });

  it('token_endpoint_auth_method: none has no secret and no client_credentials; the secret methods need a secret; fapi2 takes none of them', function () {
    const twinOf = (part: string) => CEL_TWINS[readCrdSchema('Client').rules.find((r) => r.rule.includes(part))!.rule]!;
    const code = { grant_types: ['authorization_code'], auth: { authorization_code: { redirect_uri: 'https://x.example/cb' } } };
    const publicSecretRef = twinOf("!= 'none' || !has(self.secretRef)");
    expect(publicSecretRef({ ...code, token_endpoint_auth_method: 'none', secretRef: { name: 's' } })).to.equal(false);
    expect(publicSecretRef({ ...code, token_endpoint_auth_method: 'client_secret_basic', secretRef: { name: 's' } })).to.equal(true);
    const publicGenerated = twinOf("!= 'none' || !has(self.generateSecret)");
    expect(publicGenerated({ ...code, token_endpoint_auth_method: 'none', generateSecret: true })).to.equal(false);
    expect(publicGenerated({ ...code, token_endpoint_auth_method: 'none', generateSecret: false })).to.equal(true);
    const secretNeeded = twinOf("in ['client_secret_basic', 'client_secret_post']) || has(self.secretRef)");
    expect(secretNeeded({ ...code, token_endpoint_auth_method: 'client_secret_post', generateSecret: false })).to.equal(false);
    expect(secretNeeded({ ...code, token_endpoint_auth_method: 'client_secret_post' })).to.equal(true);
    expect(secretNeeded({ ...code, generateSecret: false })).to.equal(true);
    // The REST body: the rules with fields it has, by field.
    const cc = { id: 'a', grant_types: ['client_credentials'], token_endpoint_auth_method: 'none' };
    expect(errorsOf('Client', cc)).to.have.key('grant_types');
    // A secret method is no credential of its own: a client_credentials client written so needs its secret (from the Client route).
    const ccTwin = twinOf("!self.grant_types.exists(g, g == 'client_credentials') || has(self.secretRef)");
    expect(
      ccTwin({ grant_types: ['client_credentials'], generateSecret: false, token_endpoint_auth_method: 'client_secret_basic' }),
    ).to.equal(false);
    expect(ccTwin({ grant_types: ['client_credentials'], generateSecret: false, token_endpoint_auth_method: 'tls_client_auth' })).to.equal(
      true,
    );
    for (const method of ['client_secret_basic', 'client_secret_post', 'none']) {
      const errors = errorsOf('Client', { id: 'f', ...code, profile: 'fapi2', token_endpoint_auth_method: method });
      expect(errors, method).to.have.key('token_endpoint_auth_method');
      expect(errors!.token_endpoint_auth_method!.join(' ')).to.include('never client_secret_basic, client_secret_post or none');
    }
  });

  it('the Client twin of "a client_credentials client needs a secret source" judges Kubernetes specs as CEL does', function () {
    const rule = readCrdSchema('Client').rules.find((r) => r.rule.includes('generateSecret'))!;
    const twin = CEL_TWINS[rule.rule]!;
    expect(twin({ grant_types: ['client_credentials'] })).to.equal(true); // the operator generates one
    expect(twin({ grant_types: ['client_credentials'], generateSecret: false })).to.equal(false);
    expect(twin({ grant_types: ['client_credentials'], generateSecret: false, secretRef: { name: 's' } })).to.equal(true);
    expect(twin({ grant_types: ['implicit'], generateSecret: false })).to.equal(true);
    expect(twin({ grant_types: ['client_credentials'], generateSecret: false, auth: { workload: { serviceAccounts: [] } } })).to.equal(
      true,
    );
  });
});
