// spec.serving: Hosted. The operator's shared host (a Deployment and a Service of
// its own namespace) serves such boxes; each box is an entry of the host's
// registry, a Secret the host mounts and reads again when it changes
// (api/host/registry.ts has its format). The box's Service in its namespace
// becomes an ExternalName to the host's Service, so apps keep their URL.
// Decisions here, without I/O; ../host-registry.ts writes the registry.
import { DEFAULT_METRICS_PORT } from '../../../api/public.js';
import type { KObject } from '../../kube.js';
import { MANAGED_LABELS } from '../../owned.js';
import { secretValue, type SecretObject } from '../../secrets.js';
import { API_COMMAND, baseUrlOf, boxNames, serviceMetadata, type EnvVar } from '../box-manifests.js';
import type { BoxResource, HostSettings } from './types.js';

export type { HostSettings };

export const HOST_NAME = 'boxauth-host';
export const REGISTRY_SECRET = 'boxauth-host-boxes';
export const REGISTRY_KEY = 'boxes.json';
const REGISTRY_DIR = '/etc/boxauth/host';
const HOST_PORT = 8080;
const HOST_LABELS = { 'app.kubernetes.io/name': 'boxauth', 'app.kubernetes.io/component': 'host', 'app.kubernetes.io/instance': HOST_NAME };

export const isHosted = (box: BoxResource): boolean => box.spec?.serving === 'Hosted';

/** Why `box` cannot be hosted (what it asks is a pod's own), or undefined. */
export function notHostable(box: BoxResource): string | undefined {
  const spec = box.spec ?? {};
  const fields = [
    spec.tls ? 'spec.tls (a host serves plain HTTP behind the cluster; terminate TLS at the Ingress)' : undefined,
    spec.smtp?.templates ? 'spec.smtp.templates (mail templates are files mounted into the box pods)' : undefined,
    spec.port !== undefined && spec.port !== HOST_PORT ? `spec.port ${spec.port} (a host answers on ${HOST_PORT})` : undefined,
    spec.image !== undefined ? 'spec.image (a host runs the operator’s box image)' : undefined,
  ].filter((f) => f !== undefined);
  return fields.length ? `a hosted box cannot have ${fields.join(', ')}: remove it, or set spec.serving: Dedicated` : undefined;
}

/** The Host header values the box's requests come with: its Service's names, and its base URL's host. */
export function hostnamesOf(box: BoxResource): string[] {
  const service = `${boxNames(box).service}.${box.metadata.namespace}`;
  const base = new URL(baseUrlOf(box)).host.toLowerCase();
  return [...new Set([`${service}.svc`, `${service}.svc.cluster.local`, service, base])];
}

/** The registry entry of `box`: its environment with every Secret reference resolved; or what is missing. */
export function registryEntry(
  box: BoxResource,
  env: EnvVar[],
  secrets: ReadonlyMap<string, SecretObject>,
): { entry: { box: string; hostnames: string[]; env: Record<string, string> } } | { missing: string } {
  const resolved: Record<string, string> = {};
  for (const variable of env) {
    if ('value' in variable) {
      resolved[variable.name] = variable.value;
      continue;
    }
    const { name, key } = variable.valueFrom.secretKeyRef;
    const value = secretValue(secrets.get(name), key);
    if (value === undefined) return { missing: `Secret ${box.metadata.namespace}/${name} key ${key}` };
    resolved[variable.name] = value;
  }
  return { entry: { box: `${box.metadata.namespace}/${box.metadata.name}`, hostnames: hostnamesOf(box), env: resolved } };
}

/** The box's Service while it is hosted: its name, pointing at the host's Service. */
export function hostedService(box: BoxResource, hostNamespace: string): KObject {
  return {
    metadata: serviceMetadata(box),
    spec: {
      type: 'ExternalName',
      externalName: `${HOST_NAME}.${hostNamespace}.svc.cluster.local`,
      ports: [{ name: 'http', port: 80, protocol: 'TCP' }],
    },
  };
}

/** The host's Deployment: the box image, as a host of the registry it mounts. */
export function hostDeployment(settings: HostSettings): KObject {
  const labels = { ...HOST_LABELS, ...MANAGED_LABELS };
  return {
    metadata: { name: HOST_NAME, namespace: settings.namespace, labels },
    spec: {
      replicas: settings.replicas,
      selector: { matchLabels: HOST_LABELS },
      template: {
        // No hash of the registry here: a box added or changed must not restart the host, which reads the file again.
        metadata: { labels },
        spec: {
          automountServiceAccountToken: false,
          enableServiceLinks: false,
          securityContext: { runAsNonRoot: true, runAsUser: 10001, runAsGroup: 10001, seccompProfile: { type: 'RuntimeDefault' } },
          containers: [
            {
              name: 'host',
              image: settings.image,
              imagePullPolicy: settings.imagePullPolicy,
              command: API_COMMAND,
              ports: [
                { name: 'http', containerPort: HOST_PORT, protocol: 'TCP' },
                { name: 'metrics', containerPort: DEFAULT_METRICS_PORT, protocol: 'TCP' },
              ],
              env: [
                { name: 'BOXAUTH_HOSTED_BOXES', value: `${REGISTRY_DIR}/${REGISTRY_KEY}` },
                { name: 'BOXAUTH_PORT', value: String(HOST_PORT) },
                { name: 'BOXAUTH_METRICS_PORT', value: String(DEFAULT_METRICS_PORT) },
                { name: 'BOXAUTH_HOST', value: '0.0.0.0' },
                { name: 'BOXAUTH_DATA_DIR', value: '/tmp/boxauth' },
                { name: 'BOXAUTH_SHUTDOWN_DELAY_MS', value: '2000' },
              ],
              lifecycle: { preStop: { sleep: { seconds: 5 } } },
              readinessProbe: { httpGet: { path: '/readyz', port: 'http' }, periodSeconds: 5, failureThreshold: 3 },
              livenessProbe: {
                httpGet: { path: '/healthz', port: 'http' },
                initialDelaySeconds: 10,
                periodSeconds: 10,
                failureThreshold: 6,
              },
              resources: { requests: { cpu: '100m', memory: '256Mi' }, limits: { memory: '1Gi' } },
              securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } },
              volumeMounts: [
                { name: 'tmp', mountPath: '/tmp' },
                { name: 'registry', mountPath: REGISTRY_DIR, readOnly: true },
              ],
            },
          ],
          volumes: [
            { name: 'tmp', emptyDir: {} },
            // optional: the host starts (with no box) before the operator has written its first registry.
            { name: 'registry', secret: { secretName: REGISTRY_SECRET, optional: true } },
          ],
        },
      },
    },
  };
}

/** The host's Service: port 80 (what a box's URL without a port reaches, through its ExternalName) and metrics. */
export function hostService(settings: HostSettings): KObject {
  return {
    metadata: { name: HOST_NAME, namespace: settings.namespace, labels: { ...HOST_LABELS, ...MANAGED_LABELS } },
    spec: {
      selector: HOST_LABELS,
      ports: [
        { name: 'http', port: 80, targetPort: 'http', protocol: 'TCP', appProtocol: 'http' },
        { name: 'metrics', port: DEFAULT_METRICS_PORT, targetPort: 'metrics', protocol: 'TCP' },
      ],
    },
  };
}
