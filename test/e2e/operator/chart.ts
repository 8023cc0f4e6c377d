// The Helm chart: lint, and what it renders is accepted by the API server
// (server-side dry run), with default, production and monitoring values. Its
// dashboard and alert rules ask only for metrics the box and the operator
// really export (scraped from the ones this suite runs), and Prometheus's own
// promtool accepts the rules.
import { expect } from 'chai';
import fs from 'node:fs';
import path from 'node:path';
import { stringify } from 'yaml';
import { run, TOOLS_BIN } from '../../support/kube.js';
import { chartObjects, OPERATOR_NAMESPACE, suite } from './suite.js';

/** Every monitoring object on: the operator's ServiceMonitor, the box pods' PodMonitor, the dashboard, the rules. */
const MONITORING = [
  '--set',
  'metrics.serviceMonitor.enabled=true',
  '--set',
  'grafana.dashboards.enabled=true',
  '--set',
  'prometheusRule.enabled=true',
];

// PromQL words that are not metric names: aggregations, keywords, and the functions (always followed by "(").
const PROMQL_WORDS = new Set(
  ['sum', 'min', 'max', 'avg', 'group', 'stddev', 'stdvar', 'count', 'count_values', 'bottomk', 'topk', 'quantile'].concat([
    'by',
    'without',
    'on',
    'ignoring',
    'group_left',
    'group_right',
    'and',
    'or',
    'unless',
    'bool',
    'offset',
    'inf',
    'nan',
  ]),
);

/** The metric names a PromQL expression (or a Grafana label_values() query) reads. */
export function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""') // strings: label values, regexes
    .replace(/\{[^}]*\}/g, ' ') // label matchers
    .replace(/\[[^\]]*\]/g, ' ') // ranges
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ') // label lists
    .replace(/label_values\(\s*([a-zA-Z_:][\w:]*)\s*,[^)]*\)/g, ' $1 '); // Grafana's: (metric, label)
  const names = [...bare.matchAll(/[a-zA-Z_:][\w:]*(?!\w|\s*\()/g)].map((m) => m[0]);
  return [...new Set(names.filter((n) => !PROMQL_WORDS.has(n) && !/^\d/.test(n)))];
}

/** The series names an exposition offers: each family's, with a histogram's _bucket, _sum and _count. */
function exported(exposition: string): Set<string> {
  const names = new Set<string>();
  for (const [, name, type] of exposition.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    if (type === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) names.add(name! + suffix);
    else names.add(name!);
  }
  return names;
}

export function describeChart(): void {
  describe('the Helm chart', function () {
    it('passes helm lint with default, production and monitoring values, without a warning', async function () {
      for (const args of [[], ['-f', 'charts/boxauth/values-production.yaml'], MONITORING]) {
        const r = await suite.cluster.helm(['lint', 'charts/boxauth', '--strict', ...args]);
        expect(r.code, r.stdout + r.stderr).to.equal(0);
        // Helm warned "found symbolic link in path" when the chart's CRDs were links to crds/.
        expect(r.stdout + r.stderr).to.not.match(/WARNING|symbolic link/);
      }
    });

    it('refuses, by its values.schema.json, a value of the wrong type or under a key it does not know', async function () {
      const wrongType = await suite.cluster.helm(['lint', 'charts/boxauth', '--set', 'operator.replicas=two']);
      expect(wrongType.code).to.not.equal(0);
      expect(wrongType.stdout + wrongType.stderr).to.include("at '/operator/replicas': got string, want integer");
      const typo = await suite.cluster.helm(['template', 'boxauth', 'charts/boxauth', '--set', 'operator.replica=2']);
      expect(typo.code).to.not.equal(0);
      expect(typo.stderr).to.include("additional properties 'replica' not allowed");
    });

    for (const [name, args] of [
      ['default', ['--include-crds']],
      ['production', ['-f', 'charts/boxauth/values-production.yaml']],
    ] as const) {
      it(`renders objects the API server accepts (${name} values, kubectl apply --dry-run=server)`, async function () {
        const r = await suite.cluster.helm(['template', 'boxauth', 'charts/boxauth', '-n', OPERATOR_NAMESPACE, ...args]);
        expect(r.code, r.stderr).to.equal(0);
        const applied = await suite.cluster.kubectl(['apply', '--dry-run=server', '-f', '-'], r.stdout);
        expect(applied.code, applied.stderr).to.equal(0);
        expect(applied.stdout).to.include('deployment.apps/boxauth-operator');
        if (name === 'default') expect(applied.stdout).to.include('statefulset.apps/boxauth-postgresql');
        else expect(applied.stdout).to.not.include('statefulset');
      });
    }

    it('runs the operator and the box API non-root on a read-only root filesystem', async function () {
      const r = await suite.cluster.helm(['template', 'boxauth', 'charts/boxauth', '-n', OPERATOR_NAMESPACE]);
      expect(r.stdout).to.include('readOnlyRootFilesystem: true').and.include('runAsNonRoot: true');
      const deployment = await suite.cluster.json(['get', 'deployment', '-n', 'team-a', 'auth']);
      const pod = deployment.spec.template.spec;
      expect(pod.securityContext.runAsNonRoot).to.equal(true);
      expect(pod.containers[0].securityContext).to.deep.include({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false });
    });

    it("gives the operator's ServiceAccount what the operator does, and no ClusterRoleBinding but the chart's own (kubectl auth can-i)", async function () {
      const sa = `system:serviceaccount:${OPERATOR_NAMESPACE}:boxauth-operator`;
      const can = async (args: string[]): Promise<string> =>
        (await suite.cluster.kubectl(['auth', 'can-i', `--as=${sa}`, ...args])).stdout.trim();
      // What operator/ does: its resources and their status, each box's objects in any namespace, events, its Lease,
      // and its boxes' ServiceAccounts kept among the subjects of the chart's one binding of system:auth-delegator.
      for (const args of [
        ['watch', 'boxes.boxauth.io', '--all-namespaces'],
        ['patch', 'clients.boxauth.io', '--subresource=status', '-n', 'team-a'],
        ['update', 'boxes.boxauth.io', '--subresource=finalizers', '-n', 'team-a'],
        ['create', 'deployments.apps', '-n', 'team-a'],
        ['patch', 'deployments.apps', '-n', 'team-a'],
        // The Deployment of a box moved to the host, and the host's with the last hosted box (only those it made: below).
        ['delete', 'deployments.apps', '-n', 'team-a'],
        ['create', 'secrets', '-n', 'team-a'],
        ['create', 'services', '-n', 'team-a'],
        ['patch', 'serviceaccounts', '-n', 'team-a'],
        ['create', 'events', '-n', 'team-a'],
        ['update', 'leases.coordination.k8s.io/boxauth-operator', '-n', OPERATOR_NAMESPACE],
        ['get', 'clusterrolebindings/boxauth-operator-token-review'],
        ['update', 'clusterrolebindings/boxauth-operator-token-review'],
        ['bind', 'clusterroles/system:auth-delegator'],
      ])
        expect(await can(args), args.join(' ')).to.equal('yes');
      // A stolen operator token: it cannot delete or rewrite cluster-admin's binding, make a binding of its own, or
      // point one at another role.
      for (const args of [
        ['delete', 'clusterrolebindings/cluster-admin'],
        ['delete', 'clusterrolebindings/boxauth-operator-token-review'],
        ['delete', 'clusterrolebindings'],
        ['patch', 'clusterrolebindings/cluster-admin'],
        ['update', 'clusterrolebindings/cluster-admin'],
        ['create', 'clusterrolebindings'],
        ['patch', 'clusterrolebindings/boxauth-operator-token-review'],
        ['bind', 'clusterroles/cluster-admin'],
        ['escalate', 'clusterroles'],
        ['create', 'rolebindings', '-n', 'team-a'],
        ['delete', 'secrets', '-n', 'team-a'],
        ['delete', 'secrets', '--all-namespaces'],
        ['update', 'secrets', '--all-namespaces'],
        ['delete', 'serviceaccounts', '--all-namespaces'],
        ['create', 'pods', '-n', 'team-a'],
      ])
        expect(await can(args), args.join(' ')).to.equal('no');
      const binding = await suite.cluster.json(['get', 'clusterrolebinding', 'boxauth-operator-token-review']);
      expect(binding.roleRef).to.deep.equal({ apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'system:auth-delegator' });
    });

    it("lets a stolen operator token change or delete no Secret, Deployment, Service or ServiceAccount it did not make (the chart's admission policy)", async function () {
      // RBAC must grant patch on every Secret (and Service, Deployment, ServiceAccount): the operator changes those it
      // made, whose names come from the resources it serves. The chart's ValidatingAdmissionPolicy narrows that to
      // objects labelled as the operator's, for requests made with the operator's real token.
      const asOperator = (args: string[], input?: string) => suite.cluster.kubectl(args, input, suite.operatorKubeconfig);
      const ns = 'team-a';
      // kubectl patch reads a Deployment first, which the operator may not (it lists and watches them): apply instead.
      const thiefs = (name: string): object => ({
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name, namespace: ns, labels: { 'app.kubernetes.io/managed-by': 'boxauth-operator' } },
        spec: {
          selector: { matchLabels: { app: name } },
          template: { metadata: { labels: { app: name } }, spec: { containers: [{ name, image: 'registry.example/thief:1' }] } },
        },
      });
      // Another app's objects in a box's namespace: its TLS key, its Deployment, Service and ServiceAccount.
      await suite.cluster.k(['create', 'secret', 'generic', 'shop-tls', '-n', ns, '--from-literal=tls.key=the-shops-key']);
      await suite.cluster.k(['create', 'deployment', 'shop', '-n', ns, '--image=registry.example/shop:1']);
      await suite.cluster.k(['create', 'service', 'clusterip', 'shop', '-n', ns, '--tcp=80:8080']);
      await suite.cluster.k(['create', 'serviceaccount', 'shop', '-n', ns]);
      const refusals: [string, string[], string?][] = [
        ['patch a Secret', ['patch', 'secret', 'shop-tls', '-n', ns, '-p', '{"stringData":{"tls.key":"the-thiefs-key"}}']],
        ["label it as the operator's", ['label', 'secret', 'shop-tls', '-n', ns, 'app.kubernetes.io/managed-by=boxauth-operator']],
        [
          'server-side apply it, forcing',
          ['apply', '--server-side', '--force-conflicts', '--field-manager=boxauth-operator', '-f', '-'],
          JSON.stringify({
            apiVersion: 'v1',
            kind: 'Secret',
            metadata: { name: 'shop-tls', namespace: ns, labels: { 'app.kubernetes.io/managed-by': 'boxauth-operator' } },
            stringData: { 'tls.key': 'the-thiefs-key' },
          }),
        ],
        [
          'server-side apply a Deployment',
          ['apply', '--server-side', '--force-conflicts', '--field-manager=boxauth-operator', '-f', '-'],
          JSON.stringify(thiefs('shop')),
        ],
        ['delete a Deployment', ['delete', 'deployment', 'shop', '-n', ns]],
        ['patch a Service', ['patch', 'service', 'shop', '-n', ns, '-p', '{"spec":{"selector":{"app":"thief"}}}']],
        ['patch a ServiceAccount', ['patch', 'serviceaccount', 'shop', '-n', ns, '-p', '{"automountServiceAccountToken":true}']],
        ['create an unlabelled Secret', ['create', 'secret', 'generic', 'planted', '-n', ns, '--from-literal=a=b']],
      ];
      for (const [what, args, input] of refusals) {
        const r = await asOperator(args, input);
        expect(r.code, `${what}: ${r.stdout}`).to.not.equal(0);
        expect(r.stderr, what).to.include("ValidatingAdmissionPolicy 'boxauth-operator-writes-its-own'");
      }
      const shopTls = await suite.cluster.json(['get', 'secret', 'shop-tls', '-n', ns]);
      expect(shopTls.metadata.labels).to.equal(undefined);
      expect(Buffer.from(shopTls.data['tls.key'], 'base64').toString()).to.equal('the-shops-key');
      const shop = await suite.cluster.json(['get', 'deployment', 'shop', '-n', ns]);
      expect(shop.spec.template.spec.containers[0].image).to.equal('registry.example/shop:1');
      // What the operator made stays its to change (a new signing key, <box>-database's URLs, server-side apply).
      const annotate = '{"metadata":{"annotations":{"example":"1"}}}';
      for (const [args, input] of [
        [['patch', 'secret', 'auth-signing-key', '-n', ns, '-p', annotate]],
        [['patch', 'serviceaccount', 'auth', '-n', ns, '-p', annotate]],
        [['patch', 'service', 'auth', '-n', ns, '-p', annotate]],
        [
          ['apply', '--server-side', '--field-manager=example', '-f', '-'],
          JSON.stringify({
            apiVersion: 'apps/v1',
            kind: 'Deployment',
            metadata: { name: 'auth', namespace: ns, annotations: { example: '1' } },
          }),
        ],
      ] as [string[], string?][]) {
        const r = await asOperator([...args, '--dry-run=server'], input);
        expect(r.code, `${args.join(' ')}: ${r.stderr}`).to.equal(0);
      }
      await suite.cluster.k(['delete', 'secret/shop-tls', 'deployment/shop', 'service/shop', 'serviceaccount/shop', '-n', ns]);
    });

    describe('monitoring', function () {
      let objects: any[];
      before(async function () {
        objects = await chartObjects(suite.cluster, MONITORING);
      });
      const ofKind = (kind: string): any[] => objects.filter((o) => o.kind === kind);

      it("scrapes the operator (ServiceMonitor) and, in every namespace, the box pods' port metrics (PodMonitor)", async function () {
        expect(ofKind('ServiceMonitor').map((m) => m.spec.endpoints[0].port)).to.deep.equal(['metrics']);
        const [boxes] = ofKind('PodMonitor');
        expect(boxes.spec.namespaceSelector).to.deep.equal({ any: true });
        expect(boxes.spec.podMetricsEndpoints[0].port).to.equal('metrics');
        // The labels it selects are those of the box pods the operator runs.
        const deployment = await suite.cluster.json(['get', 'deployment', '-n', 'team-a', 'auth']);
        expect(deployment.spec.template.metadata.labels).to.deep.include(boxes.spec.selector.matchLabels);
        const narrowed = await chartObjects(suite.cluster, [...MONITORING, '--set', 'metrics.serviceMonitor.boxNamespaces={team-a}']);
        expect(narrowed.find((o) => o.kind === 'PodMonitor').spec.namespaceSelector).to.deep.equal({ matchNames: ['team-a'] });
      });

      it("ships the dashboard in a ConfigMap for Grafana's sidecar", function () {
        const [configMap] = ofKind('ConfigMap').filter((c) => c.metadata.name === 'boxauth-dashboard');
        expect(configMap.metadata.labels).to.include({ grafana_dashboard: '1' });
        const dashboard = JSON.parse(configMap.data['boxauth.json']);
        expect(dashboard).to.deep.equal(JSON.parse(fs.readFileSync('charts/boxauth/dashboards/boxauth.json', 'utf8')));
      });

      it('has alert rules that promtool check rules accepts', async function () {
        const [rule] = ofKind('PrometheusRule');
        const file = path.join(suite.cluster.dir, 'boxauth-rules.yaml');
        fs.writeFileSync(file, stringify({ groups: rule.spec.groups }));
        const r = await run(path.join(TOOLS_BIN, 'promtool'), ['check', 'rules', file]);
        expect(r.code, r.stdout + r.stderr).to.equal(0);
        expect(r.stdout).to.match(/SUCCESS: \d+ rules found/);
      });

      it('asks, in every dashboard query and alert rule, only for metrics the box or the operator exports', async function () {
        const box = suite.pods.find((p) => p.process?.exitCode === null && p.process.signalCode === null);
        expect(box, 'a box API process of this suite').to.not.equal(undefined);
        const operator = await (await fetch(`http://127.0.0.1:${suite.operator.healthPort}/metrics`)).text();
        const available = new Set([...exported(await box!.metrics()), ...exported(operator)]);
        available.add('up'); // Prometheus writes it for every target it scrapes (the PodMonitor's and ServiceMonitor's jobs)
        const dashboard = JSON.parse(ofKind('ConfigMap').find((c) => c.metadata.name === 'boxauth-dashboard').data['boxauth.json']);
        const queries: string[] = [
          ...dashboard.panels.flatMap((p: any) => (p.targets ?? []).map((t: any) => t.expr)),
          ...dashboard.templating.list.filter((v: any) => v.type === 'query').map((v: any) => v.query.query),
          ...ofKind('PrometheusRule')[0].spec.groups.flatMap((g: any) => g.rules.map((r: any) => r.expr)),
        ];
        expect(queries).to.have.length.above(20);
        const named = queries.map((q) => ({ q, names: metricNames(q) }));
        for (const { q, names } of named) expect(names, q).to.have.length.above(0);
        const unknown = named.flatMap(({ q, names }) => names.filter((n) => !available.has(n)).map((n) => `${n} in ${q}`));
        expect(unknown).to.deep.equal([]);
        // Every kind of metric the brief of the dashboard names is there.
        const all = new Set(named.flatMap(({ names }) => names));
        for (const m of [
          'boxauth_tokens_issued_total',
          'boxauth_token_duration_seconds_bucket',
          'boxauth_refusals_total',
          'boxauth_sign_ins_total',
          'boxauth_operator_reconciles_total',
          'boxauth_operator_queue_depth',
          'up',
        ]) {
          expect(all.has(m), m).to.equal(true);
        }
      });
    });
  });
}
