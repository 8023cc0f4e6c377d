// What GitOps tools read: each kind in each state, as the operator leaves it on
// the real API server (kubectl get -o json), judged by kstatus itself (Flux's
// reading: sigs.k8s.io/cli-utils, the helper of test/kstatus) and by the
// chart's Argo CD health checks under Debian's Lua: InProgress/Progressing
// when just created (status.observedGeneration 0, the CRDs' default) and while
// a resource waits for a Box or a Secret, Current/Healthy when Ready,
// Failed/Degraded when stalled. The objects are written to
// test-artifacts/health/ for whoever wants to look at them.
import { expect } from 'chai';
import fs from 'node:fs';
import path from 'node:path';
import { projectPath } from '../../../api/paths.js';
import { eventually, run, TOOLS_BIN } from '../../support/kube.js';
import { suite } from './suite.js';

const NS = 'gitops';
const LUA = '/usr/bin/lua5.4';
const ARTIFACTS = projectPath('test-artifacts', 'health');

interface Case {
  state: 'just created' | 'waiting for a Box' | 'waiting for a Secret' | 'Ready' | 'stalled';
  object: any;
}

/** A JSON value as a Lua expression (what Argo CD hands a health check as `obj`). */
function lua(value: unknown): string {
  if (value === null || value === undefined) return 'nil';
  if (typeof value === 'string') return JSON.stringify(value); // JSON's escapes are Lua's for these strings
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (Array.isArray(value)) return `{${value.map(lua).join(', ')}}`;
  return `{${Object.entries(value as Record<string, unknown>)
    .map(([k, v]) => `[${JSON.stringify(k)}] = ${lua(v)}`)
    .join(', ')}}`;
}

/** kstatus's verdict on each object (one run of the helper). */
async function kstatus(objects: any[]): Promise<{ status: string; message: string }[]> {
  const r = await run(path.join(TOOLS_BIN, 'kstatus'), [], { input: JSON.stringify({ kind: 'List', items: objects }) });
  expect(r.code, r.stderr).to.equal(0);
  return JSON.parse(r.stdout);
}

/** The chart's Argo CD health check of each object's kind, run on it (one Lua process). */
async function argoHealth(objects: any[]): Promise<{ status: string; message: string }[]> {
  const script = path.join(suite.cluster.dir, 'argocd-health.lua');
  const checks = objects.map((o) => {
    const file = projectPath('charts', 'boxauth', 'argocd', 'resource_customizations', 'boxauth.io', o.kind, 'health.lua');
    return `obj = ${lua(o)}\nlocal hs = dofile(${JSON.stringify(file)})\nio.write(hs.status, "\\t", hs.message or "", "\\n")`;
  });
  fs.writeFileSync(script, checks.join('\n'));
  const r = await run(LUA, [script]);
  expect(r.code, r.stderr).to.equal(0);
  return r.stdout
    .trimEnd()
    .split('\n')
    .map((line) => {
      const [status, message] = line.split('\t');
      return { status: status!, message: message! };
    });
}

export function describeHealth(): void {
  describe('health as GitOps tools read it (kstatus, Argo CD)', function () {
    const cases: Case[] = [];
    const k = (args: string[], input?: string): Promise<string> => suite.cluster.k(args, input);
    const manifest = (kind: string, name: string, spec: unknown): string =>
      JSON.stringify({ apiVersion: 'boxauth.io/v1alpha1', kind, metadata: { name }, spec });
    const apply = (kind: string, name: string, spec: unknown): Promise<string> =>
      k(['apply', '-n', NS, '-f', '-'], manifest(kind, name, spec));

    /** Waits until the object's condition has that status and reason (at its generation), then keeps it as a case. */
    async function capture(state: Case['state'], kind: string, name: string, type: string, reason: string): Promise<void> {
      const object = await eventually(`${kind} ${NS}/${name} ${type}=True ${reason}`, async () => {
        const obj = await suite.cluster.json(['get', kind, '-n', NS, name]);
        const c = obj.status?.conditions?.find((x: any) => x.type === type);
        const settled = obj.status?.observedGeneration === obj.metadata.generation;
        return c?.status === 'True' && c.reason === reason && settled && obj;
      });
      delete object.metadata.managedFields;
      cases.push({ state, object });
    }

    before(async function () {
      this.timeout(180_000);
      await k(['create', 'namespace', NS]);
      // Each kind as the API server stores it at creation, before the operator has looked (a server-side dry run).
      for (const [kind, spec] of [
        ['Box', {}],
        ['Client', { grant_types: ['client_credentials'] }],
        ['AccessPolicy', { engine: 'allow' }],
      ] as const) {
        const object = JSON.parse(await k(['create', '--dry-run=server', '-o', 'json', '-n', NS, '-f', '-'], manifest(kind, 'new', spec)));
        delete object.metadata.managedFields;
        cases.push({ state: 'just created', object });
      }
      // Applied in any order, as a GitOps tool does: the Client and the policy before their Box.
      await apply('Client', 'orders', { grant_types: ['client_credentials'], secretRef: { name: 'orders-credentials' } });
      await apply('AccessPolicy', 'orders-allow', { engine: 'allow', link: [{ id: 'orders', resourceType: 'Client' }] });
      await capture('waiting for a Box', 'client', 'orders', 'Reconciling', 'BoxNotFound');
      await capture('waiting for a Box', 'accesspolicy', 'orders-allow', 'Reconciling', 'BoxNotFound');
      // A Box whose certificate (cert-manager's, say) is not there yet.
      await apply('Box', 'auth', { tls: { secretName: 'auth-tls' } });
      await capture('waiting for a Secret', 'box', 'auth', 'Reconciling', 'TLSSecretNotReady');
      await k(['patch', 'box', 'auth', '-n', NS, '--type=json', '-p', '[{"op":"remove","path":"/spec/tls"}]']);
      await capture('waiting for a Secret', 'client', 'orders', 'Reconciling', 'SecretNotFound');
      await k(['create', 'secret', 'generic', 'orders-credentials', '-n', NS, '--from-literal=client-secret=orders-long-enough-secret']);
      // As docs/kubernetes/conditions.md says: one kubectl wait for every resource of the namespace.
      await k(['wait', '-n', NS, '--for=condition=Ready', 'boxes,clients,accesspolicies', '--all', '--timeout=60s']);
      await capture('Ready', 'box', 'auth', 'Ready', 'Provisioned');
      await capture('Ready', 'client', 'orders', 'Ready', 'Reconciled');
      await capture('Ready', 'accesspolicy', 'orders-allow', 'Ready', 'Reconciled');
      // What no retry fixes: a second Box, a secret too short, a reserved name.
      await apply('Box', 'second', {});
      await k(['create', 'secret', 'generic', 'short', '-n', NS, '--from-literal=client-secret=short']);
      await apply('Client', 'short', { grant_types: ['client_credentials'], secretRef: { name: 'short' } });
      await apply('AccessPolicy', 'root-allow', { engine: 'allow' });
      await capture('stalled', 'box', 'second', 'Stalled', 'DuplicateBox');
      await capture('stalled', 'client', 'short', 'Stalled', 'SecretTooShort');
      await capture('stalled', 'accesspolicy', 'root-allow', 'Stalled', 'ReservedName');
      fs.mkdirSync(ARTIFACTS, { recursive: true });
      for (const { state, object } of cases) {
        const file = `${object.kind}-${object.metadata.name}-${state.replace(/\W+/g, '-')}.json`;
        fs.writeFileSync(path.join(ARTIFACTS, file), `${JSON.stringify(object, null, 2)}\n`);
      }
    });

    /** Prints the tool's verdict on each case, and expects the status `expected` gives for its state. */
    function expectVerdicts(tool: string, verdicts: { status: string }[], expected: Record<Case['state'], string>): void {
      const table = cases.map(({ state, object }, i) => `${object.kind} ${object.metadata.name} (${state}): ${verdicts[i]!.status}`);
      process.stdout.write(`      ${tool}:\n${table.map((l) => `        ${l}\n`).join('')}`);
      expect(table).to.deep.equal(
        cases.map(({ state, object }) => `${object.kind} ${object.metadata.name} (${state}): ${expected[state]}`),
      );
    }

    it('kstatus: InProgress while waiting for a Box or a Secret, Current when Ready, Failed when stalled, for every kind', async function () {
      const verdicts = await kstatus(cases.map((c) => c.object));
      expectVerdicts('kstatus (sigs.k8s.io/cli-utils/pkg/kstatus/status.Compute)', verdicts, {
        'just created': 'InProgress',
        'waiting for a Box': 'InProgress',
        'waiting for a Secret': 'InProgress',
        Ready: 'Current',
        stalled: 'Failed',
      });
      const failed = verdicts.find((v) => v.status === 'Failed')!;
      expect(failed.message).to.include('namespace gitops already has Box auth'); // the Stalled condition's message
    });

    it("Argo CD (the chart's health.lua per kind, under Lua): Progressing, Healthy, Degraded as the conditions say", async function () {
      const verdicts = await argoHealth(cases.map((c) => c.object));
      expectVerdicts('Argo CD health.lua', verdicts, {
        'just created': 'Progressing',
        'waiting for a Box': 'Progressing',
        'waiting for a Secret': 'Progressing',
        Ready: 'Healthy',
        stalled: 'Degraded',
      });
      expect(verdicts.map((v) => v.message)).to.include.members([
        'BoxNotFound: no Box in namespace gitops: create one (e.g. kubectl apply -n gitops -f examples/box.yaml)',
        'SecretNotFound: Secret gitops/orders-credentials (spec.secretRef) does not exist; create it',
      ]);
      expect(verdicts[0]).to.deep.equal({ status: 'Progressing', message: 'Waiting for the boxauth operator' }); // just created
      // One whose new generation the operator has not done yet is not Healthy either.
      const ready = cases.find((c) => c.state === 'Ready')!.object;
      const next = ready.metadata.generation + 1;
      const [behind] = await argoHealth([{ ...ready, metadata: { ...ready.metadata, generation: next } }]);
      expect(behind).to.deep.equal({ status: 'Progressing', message: `Waiting for the boxauth operator to reconcile generation ${next}` });
    });

    it('kubectl wait --for=condition=Ready waits for the generation it is given, not an older Ready', async function () {
      await k(['patch', 'accesspolicy', 'orders-allow', '-n', NS, '--type=merge', '-p', '{"spec":{"description":"generation 2"}}']);
      await k(['wait', '-n', NS, '--for=condition=Ready', 'accesspolicy/orders-allow', '--timeout=30s']);
      const policy = await suite.cluster.json(['get', 'accesspolicy', '-n', NS, 'orders-allow']);
      expect(policy.metadata.generation).to.equal(2);
      for (const c of policy.status.conditions) expect(c.observedGeneration, c.type).to.equal(2);
    });
  });
}
