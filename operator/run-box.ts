// Runs a box's API on this machine as a kubelet would run its pod: the
// container command of the Deployment the operator wrote, from the project
// root, with its environment resolved from the API server (values, Secrets,
// ConfigMaps, the downward API). For clusters without a kubelet (`make
// kube-up`):  node dist/operator/run-box.js <namespace> [box]   (or: make box)
import { spawn } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import { projectPath } from '../api/paths.js';
import { DEPLOYMENTS, Kube, type KObject } from './kube.js';

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: {
    secretKeyRef?: { name: string; key: string };
    configMapKeyRef?: { name: string; key: string };
    fieldRef?: { fieldPath: string };
  };
}

export interface Container {
  name: string;
  command?: string[];
  args?: string[];
  env?: EnvVar[];
  ports?: { containerPort: number }[];
}

type Deployment = KObject & { spec: { template: { spec: { containers: Container[] } } } };

/** The first container of the Deployment and its environment, every reference resolved. */
export async function containerOf(kube: Kube, namespace: string, name: string): Promise<{ container: Container; env: Record<string, string> }> {
  const deployment = await kube.get<Deployment>(DEPLOYMENTS, namespace, name);
  const container = deployment.spec.template.spec.containers[0]!;
  const env: Record<string, string> = {};
  const data = async (kind: 'secrets' | 'configmaps', ref: { name: string; key: string }): Promise<string> => {
    const obj = await kube.request<{ data?: Record<string, string> }>('GET', `/api/v1/namespaces/${namespace}/${kind}/${ref.name}`);
    const raw = obj.data?.[ref.key];
    if (raw === undefined) throw new Error(`${kind} ${namespace}/${ref.name} has no key ${ref.key}`);
    return kind === 'secrets' ? Buffer.from(raw, 'base64').toString('utf8') : raw;
  };
  const fields: Record<string, string> = { 'metadata.namespace': namespace, 'metadata.name': `${name}-local` };
  for (const e of container.env ?? []) {
    if (e.value !== undefined) env[e.name] = e.value;
    else if (e.valueFrom?.secretKeyRef) env[e.name] = await data('secrets', e.valueFrom.secretKeyRef);
    else if (e.valueFrom?.configMapKeyRef) env[e.name] = await data('configmaps', e.valueFrom.configMapKeyRef);
    else if (e.valueFrom?.fieldRef) env[e.name] = fields[e.valueFrom.fieldRef.fieldPath] ?? '';
    else env[e.name] = '';
  }
  return { container, env };
}

async function main(): Promise<void> {
  const [namespace, box = 'auth'] = process.argv.slice(2);
  if (!namespace || namespace.startsWith('-')) {
    process.stderr.write('usage: node dist/operator/run-box.js <namespace> [box]   (the box of that namespace, default "auth")\n');
    process.exit(2);
  }
  const kube = Kube.fromEnvironment();
  const { container, env } = await containerOf(kube, namespace, box);
  kube.close();
  const [file, ...args] = [...(container.command ?? []), ...(container.args ?? [])];
  process.stderr.write(`run-box: ${namespace}/${box}: ${[file, ...args].join(' ')} (port ${env.BOXAUTH_PORT}, base URL ${env.BOXAUTH_BASE_URL})\n`);
  // PATH is the one thing the image gives besides the container's env.
  const child = spawn(file!, args, { cwd: projectPath(), env: { PATH: process.env.PATH ?? '', ...env }, stdio: 'inherit' });
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => child.kill(signal));
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((err: Error) => {
    process.stderr.write(`run-box: ${err.message}\n`);
    process.exit(1);
  });
}
