// How long the operator takes, end to end, on a real kube-apiserver + etcd:
// - from `kubectl apply` of a Client to the first token the box issues to it
//   (its generated secret read from its Secret), for 50 clients one at a time,
//   then for 50 clients in one `kubectl apply`;
// - from a change of a client's Secret to the first token with the new value.
// Prints a table and a JSON line. Run with `make bench-operator`.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startEmbeddedPostgres } from '../../api/db/embedded.js';
import { projectPath } from '../../api/paths.js';
import { SECRETS } from '../../operator/kube.js';
import { basic } from '../e2e/operator/suite.js';
import type { Box } from '../support/box.js';
import { OperatorProcess, TestCluster } from '../support/kube.js';
import { onFreePorts } from '../support/ports.js';
import { summary } from './latency.js';

const N = Number(process.env.BENCH_CLIENTS ?? 50);
const ROTATIONS = Number(process.env.BENCH_ROTATIONS ?? 20);
const NS = 'bench';

async function tokenWorks(api: Box, id: string, secret: string): Promise<boolean> {
  const res = await api.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic(id, secret) });
  return res.status === 200;
}

async function main(): Promise<void> {
  // In the project (not /tmp): as root, PostgreSQL runs as the postgres user, who must reach its data dir.
  const dataDir = projectPath('.boxauth', 'bench-operator');
  const db = await startEmbeddedPostgres(dataDir, () => undefined);
  const cluster = await TestCluster.start();
  let operator: OperatorProcess | undefined;
  let api: Box | undefined;
  try {
    const kube = cluster.adminKube();
    operator = await OperatorProcess.start(cluster.kubeconfig, {
      DATABASE_URL: db.url,
      BOXAUTH_DATA_DIR: dataDir,
      BOXAUTH_LOG_LEVEL: process.env.BENCH_OPERATOR_LOG ? 'debug' : 'warn',
    });
    await cluster.k(['create', 'namespace', NS]);
    // The Box's port is its API's, on this machine: the Box again on a new one when another process took it before the API listened.
    api = await onFreePorts(
      1,
      async ([port]) => {
        await cluster.k(
          ['apply', '-f', '-'],
          JSON.stringify({
            apiVersion: 'boxauth.io/v1alpha1',
            kind: 'Box',
            metadata: { name: 'auth', namespace: NS },
            spec: { port, baseUrl: `http://127.0.0.1:${port}` },
          }),
        );
        await cluster.k(['wait', '--for=condition=Ready', 'box/auth', '-n', NS, '--timeout=60s']);
        return (await cluster.runDeployment(NS, 'auth')).box;
      },
      (err) => /\(BOXAUTH_PORT\) is in use/.test(String(err)),
    );

    /** Polls (every 10 ms) until the client's generated Secret exists and its value gets a token. */
    const untilToken = async (id: string, started: number): Promise<number> => {
      for (;;) {
        const secret = await kube.find<{ data?: Record<string, string> }>(SECRETS, NS, `${id}-client-secret`);
        const raw = secret?.data?.['client-secret'];
        if (raw && (await tokenWorks(api!, id, Buffer.from(raw, 'base64').toString('utf8')))) return Date.now() - started;
        if (Date.now() - started > 60_000) throw new Error(`no token for ${id} after 60 s`);
        await new Promise((r) => setTimeout(r, 10));
      }
    };
    const client = (name: string): unknown => ({
      apiVersion: 'boxauth.io/v1alpha1',
      kind: 'Client',
      metadata: { name, namespace: NS },
      spec: { grant_types: ['client_credentials'] },
    });
    const kubectl = (input: string): void => {
      const r = spawnSync(
        path.join(os.homedir(), '.cache/boxauth/kube/bin/kubectl'),
        [`--kubeconfig=${cluster.kubeconfig}`, 'apply', '-f', '-'],
        { input },
      );
      if (r.status !== 0) throw new Error(r.stderr.toString());
    };

    const oneByOne: number[] = [];
    for (let i = 0; i < N; i++) {
      const started = Date.now();
      kubectl(JSON.stringify(client(`one-${i}`)));
      const applied = Date.now() - started;
      oneByOne.push(await untilToken(`one-${i}`, started));
      if (process.env.BENCH_OPERATOR_LOG)
        process.stderr.write(`one-${i}: ${oneByOne.at(-1)} ms (kubectl ${applied} ms) at ${new Date().toISOString()}\n`);
    }

    const burstStart = Date.now();
    kubectl(JSON.stringify({ apiVersion: 'v1', kind: 'List', items: Array.from({ length: N }, (_, i) => client(`burst-${i}`)) }));
    const burst = await Promise.all(Array.from({ length: N }, (_, i) => untilToken(`burst-${i}`, burstStart)));

    await cluster.k(['create', 'secret', 'generic', 'rotating', '-n', NS, '--from-literal=client-secret=rotation-secret-0']);
    kubectl(
      JSON.stringify({ ...(client('rotating') as object), spec: { grant_types: ['client_credentials'], secretRef: { name: 'rotating' } } }),
    );
    await cluster.k(['wait', '--for=condition=Ready', 'client/rotating', '-n', NS, '--timeout=60s']);
    const rotations: number[] = [];
    for (let i = 1; i <= ROTATIONS; i++) {
      const value = `rotation-secret-${i}`;
      const started = Date.now();
      await kube.patch(SECRETS, NS, 'rotating', { stringData: { 'client-secret': value } });
      while (!(await tokenWorks(api, 'rotating', value))) {
        if (Date.now() - started > 30_000) throw new Error('rotation not applied after 30 s');
        await new Promise((r) => setTimeout(r, 10));
      }
      rotations.push(Date.now() - started);
      if (process.env.BENCH_OPERATOR_LOG) process.stderr.write(`rotation ${i}: ${rotations.at(-1)} ms at ${new Date().toISOString()}\n`);
    }
    kube.close();

    const rows = [
      [`kubectl apply → token, ${N} clients one at a time`, summary(oneByOne)],
      [`kubectl apply → token, ${N} clients in one apply`, summary(burst)],
      [`Secret change → new secret works (${ROTATIONS} rotations)`, summary(rotations)],
    ] as const;
    process.stdout.write(
      `\n${'scenario'.padEnd(56)} ${'p50'.padStart(7)} ${'p90'.padStart(7)} ${'p99'.padStart(7)} ${'max'.padStart(7)}  (ms)\n`,
    );
    for (const [name, s] of rows) {
      process.stdout.write(
        `${name.padEnd(56)} ${String(s.p50).padStart(7)} ${String(s.p90).padStart(7)} ${String(s.p99).padStart(7)} ${String(s.max).padStart(7)}\n`,
      );
    }
    process.stdout.write(
      `${JSON.stringify({ applyToToken: summary(oneByOne), burstApplyToToken: summary(burst), rotation: summary(rotations), cpus: os.cpus().length })}\n`,
    );
  } finally {
    if (process.env.BENCH_OPERATOR_LOG) {
      fs.writeFileSync(process.env.BENCH_OPERATOR_LOG, operator?.logs.map((l) => JSON.stringify(l)).join('\n') ?? '');
      fs.writeFileSync(`${process.env.BENCH_OPERATOR_LOG}.api`, api?.logs.join('\n') ?? '');
    }
    await api?.stop();
    await operator?.kill('SIGTERM');
    await cluster.stop();
    await db.stop();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((err: Error) => {
  process.stderr.write(`operator-latency: ${err.stack ?? err.message}\n`);
  process.exit(1);
});
