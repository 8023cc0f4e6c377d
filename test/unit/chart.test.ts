// The chart's files kept beside the code: its CRDs are copies of crds/ (Helm warns about
// symbolic links and packages files), and values.schema.json describes every value of
// values.yaml, so that Helm refuses a wrong one before anything reaches a cluster.
// (test/e2e/operator/chart.ts runs helm itself on them.)
import { Ajv, type ValidateFunction } from 'ajv';
import { expect } from 'chai';
import fs from 'node:fs';
import path from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { projectPath } from '../../api/paths.js';
import { CRD_KINDS } from '../../api/record-kinds.js';

const CHART = projectPath('charts', 'boxauth');
const readYamlFile = (file: string): Record<string, unknown> => parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>;

type Schema = {
  $ref?: string;
  type?: string | string[];
  description?: string;
  properties?: Record<string, Schema>;
  additionalProperties?: boolean | Schema;
  definitions?: Record<string, Schema>;
};

describe('charts/boxauth', function () {
  it('has its CRDs as files copied from crds/ (make chart-crds), none stale, none missing, no links', function () {
    const sources = fs.readdirSync(projectPath('crds')).filter((f) => f.endsWith('.yaml'));
    const copies = fs.readdirSync(path.join(CHART, 'crds'));
    expect(copies.sort(), 'run make chart-crds').to.deep.equal(sources.sort());
    for (const name of sources) {
      const copy = path.join(CHART, 'crds', name);
      expect(fs.lstatSync(copy).isSymbolicLink(), `${copy} is a link`).to.equal(false);
      const expected = `# Generated from crds/${name} by make chart-crds: edit that file, not this copy.\n${fs.readFileSync(projectPath('crds', name), 'utf8')}`;
      expect(fs.readFileSync(copy, 'utf8') === expected, `${copy} is stale: run make chart-crds`).to.equal(true);
    }
  });

  it('has one Argo CD health check per kind, each made from the one template (make chart-health), none stale', function () {
    const template = fs.readFileSync(path.join(CHART, 'argocd', 'health.lua.template'), 'utf8');
    const dir = path.join(CHART, 'argocd', 'resource_customizations', 'boxauth.io');
    expect(fs.readdirSync(dir).sort()).to.deep.equal([...CRD_KINDS].sort());
    for (const kind of CRD_KINDS) {
      const expected = `-- Generated from charts/boxauth/argocd/health.lua.template by make chart-health: edit that file.\n${template.replaceAll('{{KIND}}', kind)}`;
      const file = path.join(dir, kind, 'health.lua');
      expect(fs.readFileSync(file, 'utf8') === expected, `${file} is stale: run make chart-health`).to.equal(true);
    }
  });

  it("lets Kubernetes' view and edit roles read and write Clients, AccessPolicies and Apps, but Boxes, IdentityProviders and Webhooks only through a role of their own", function () {
    // The template without Helm: its conditionals and labels' include dropped, the name given.
    const text = fs
      .readFileSync(path.join(CHART, 'templates', 'rbac-users.yaml'), 'utf8')
      .replace(/^\{\{-? (if|end)\b.*\}\}\n/gm, '')
      .replace(/^.*include "boxauth.labels".*\n/gm, '')
      .replaceAll('{{ include "boxauth.fullname" . }}', 'boxauth');
    type Rule = { apiGroups: string[]; resources: string[]; verbs: string[] };
    type Role = { kind: string; metadata: { name: string; labels?: Record<string, string> }; rules: Rule[] };
    const roles = parseAllDocuments(text).map((d) => d.toJS() as Role);
    const kinds = fs
      .readdirSync(projectPath('crds'))
      .map((f) => (readYamlFile(projectPath('crds', f)).spec as { names: { plural: string } }).names.plural);
    // Whoever writes a Box picks the code run with its Secrets; whoever writes an IdentityProvider says who people are;
    // whoever writes a Webhook sends every person's events out of the box; a Hook is asked about every sign-in and token.
    const held = ['boxes', 'hooks', 'identityproviders', 'webhooks'];
    const records = kinds.filter((k) => !held.includes(k));
    expect(records.sort()).to.deep.equal(['accesspolicies', 'apps', 'clients']);
    const granted = (role: Role, verb: string): string[] =>
      role.rules
        .filter((r) => r.apiGroups.includes('boxauth.io') && r.verbs.includes(verb))
        .flatMap((r) => r.resources)
        .sort();
    const aggregatedTo = (role: Role): string[] =>
      Object.entries(role.metadata.labels ?? {})
        .filter(([k, v]) => k.startsWith('rbac.authorization.k8s.io/aggregate-to-') && v === 'true')
        .map(([k]) => k.split('aggregate-to-')[1]!);
    const byName = Object.fromEntries(roles.map((r) => [r.metadata.name, r]));
    expect(Object.keys(byName).sort()).to.deep.equal(['boxauth-box-admin', 'boxauth-edit', 'boxauth-view']);
    for (const r of roles) expect(r.kind).to.equal('ClusterRole');

    const view = byName['boxauth-view']!;
    expect(aggregatedTo(view)).to.deep.equal(['view']); // view is part of edit and admin in turn
    expect(granted(view, 'list')).to.deep.equal(kinds.flatMap((k) => [k, `${k}/status`]).sort());
    for (const verb of ['create', 'update', 'patch', 'delete']) expect(granted(view, verb), verb).to.deep.equal([]);

    const edit = byName['boxauth-edit']!;
    expect(aggregatedTo(edit)).to.deep.equal(['edit']); // edit is part of admin
    for (const verb of ['create', 'update', 'patch', 'delete']) expect(granted(edit, verb), verb).to.deep.equal(records.sort());

    const boxes = byName['boxauth-box-admin']!;
    expect(aggregatedTo(boxes)).to.deep.equal([]); // bound on purpose, never by being an editor
    for (const verb of ['create', 'update', 'patch', 'delete']) expect(granted(boxes, verb), verb).to.deep.equal(held);
  });

  describe('values.schema.json', function () {
    let schema: Schema;
    let validate: ValidateFunction;
    before(function () {
      schema = JSON.parse(fs.readFileSync(path.join(CHART, 'values.schema.json'), 'utf8')) as Schema;
      // ajv's default draft is draft-07, the one the schema declares (Helm reads it too).
      validate = new Ajv({ allErrors: true, allowUnionTypes: true }).compile(schema);
    });

    const valid = (values: unknown): boolean => validate(values) === true;

    it('accepts values.yaml and values-production.yaml', function () {
      for (const file of ['values.yaml', 'values-production.yaml']) {
        const ok = valid(readYamlFile(path.join(CHART, file)));
        expect(ok, `${file}: ${JSON.stringify(validate.errors)}`).to.equal(true);
      }
    });

    it('gives every value of values.yaml a type and a description', function () {
      const resolve = (node: Schema): Schema =>
        node.$ref ? { ...resolve(schema.definitions![node.$ref.split('/').pop()!]!), ...node } : node;
      const undescribed: string[] = [];
      const walk = (value: unknown, node: Schema, at: string): void => {
        const n = resolve(node);
        if (!n.type || !n.description) undescribed.push(at);
        if (value === null || typeof value !== 'object' || Array.isArray(value) || !n.properties) return;
        for (const [key, child] of Object.entries(value)) {
          const sub = n.properties[key];
          if (!sub) undescribed.push(`${at}.${key} (not in the schema)`);
          else walk(child, sub, `${at}.${key}`);
        }
      };
      for (const [key, value] of Object.entries(readYamlFile(path.join(CHART, 'values.yaml')))) {
        const sub = schema.properties![key];
        if (!sub) undescribed.push(`${key} (not in the schema)`);
        else walk(value, sub, key);
      }
      expect(undescribed).to.deep.equal([]);
    });

    it('refuses a value of the wrong type, outside its enum, or under a key the chart does not know', function () {
      const values = readYamlFile(path.join(CHART, 'values.yaml'));
      const operator = values.operator as Record<string, unknown>;
      const image = values.image as Record<string, unknown>;
      expect(valid({ ...values, operator: { ...operator, replicas: 'two' } })).to.equal(false);
      expect(validate.errors?.[0]).to.include({ instancePath: '/operator/replicas', message: 'must be integer' });
      expect(valid({ ...values, image: { ...image, pullPolicy: 'Sometimes' } })).to.equal(false);
      expect(valid({ ...values, operator: { ...operator, replica: 3 } })).to.equal(false);
      expect(valid({ ...values, replicaCount: 2 })).to.equal(false);
      // The host's replicas: a number, or auto (an HPA scales it).
      const hosts = values.hosts as Record<string, unknown>;
      expect(valid({ ...values, hosts: { ...hosts, replicas: 'auto' } })).to.equal(true);
      expect(valid({ ...values, hosts: { ...hosts, replicas: 'hpa' } })).to.equal(false);
      expect(valid({ ...values, hosts: { ...hosts, replicas: 0 } })).to.equal(false);
      expect(valid({ ...values, postgresql: { ...(values.postgresql as object), username: 'bob"; DROP' } })).to.equal(false);
    });
  });
});
