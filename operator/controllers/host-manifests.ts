// The host of hosted boxes (Box.spec.serving: Hosted; docs/kubernetes/hosted-boxes.md), as the operator makes it in
// its own namespace: the Deployment and Service `boxauth-host`, its ServiceAccount, and the registry it serves from,
// the Secret `boxauth-host-boxes`, whose boxes.json lists each hosted box with its host names and its variables (the
// ones its dedicated Deployment would have, each Secret reference replaced by the Secret's value: the host reads no
// Secret of a box's namespace, and holds no right to). Also what a Box may not ask for and be hosted.
import { DEFAULT_METRICS_PORT, type RegistryEntry } from '../../api/public.js';
import { FIELD_MANAGER, type KObject } from '../kube.js';
import { MANAGED_LABELS } from '../owned.js';
import { secretValue, type SecretObject } from '../secrets.js';
import { API_COMMAND, apiEnv, baseUrlOf, boxNames, usesTokenReview, type EnvVar } from './box-manifests.js';
import type { BoxResource, HostSettings } from './box/types.js';

export type { HostSettings };

export const HOST_NAME = 'boxauth-host';
export const REGISTRY_SECRET = 'boxauth-host-boxes';
export const REGISTRY_KEY = 'boxes.json';
const REGISTRY_DIR = '/etc/boxauth/host';
/** The host's port: a box's default (spec.port), which a hosted box keeps. */
export const HOST_PORT = 8080;
/** The Service answers on 80 as a box's own did (apps call http://<box>.<ns>.svc, now an ExternalName of it) and on 8080. */
const HOST_SERVICE_PORTS = [80, HOST_PORT];
const PRE_STOP_SECONDS = 5;

export const hostLabels = { 'app.kubernetes.io/name': 'boxauth', 'app.kubernetes.io/component': 'host' } as const;

/** What a box's Service points at while it is hosted. */
export const hostAddress = (settings: HostSettings): string => `${HOST_NAME}.${settings.namespace}.svc.cluster.local`;
/** status.host: the host serving a box. */
export const hostId = (settings: HostSettings): string => `${settings.namespace}/${HOST_NAME}`;
export const defaultHostUrl = (namespace: string): string => `http://${HOST_NAME}.${namespace}.svc:${HOST_PORT}`;

/**
 * Why the Box cannot be hosted, naming the field; undefined when it can. What the host cannot do for one box: serve
 * HTTPS with the box's certificate, mount its mail templates, listen on a port of its own, run another image, run as
 * the box's ServiceAccount, or review tokens (the host's ServiceAccount has no system:auth-delegator).
 */
export function notHostable(box: BoxResource, settings: HostSettings): string | undefined {
  const spec = box.spec ?? {};
  const refusal = (field: string, why: string): string =>
    `${field}: ${why}; a hosted box cannot have it: remove it, or set spec.serving to Dedicated`;
  if (spec.tls)
    return refusal('spec.tls', 'the host serves HTTP on its own port, with no certificate of the box (terminate TLS at a gateway)');
  if (spec.smtp?.templates) return refusal('spec.smtp.templates', 'the host mounts no ConfigMap of a box');
  if ((spec.port ?? HOST_PORT) !== HOST_PORT)
    return refusal(`spec.port ${spec.port}`, `the host listens on ${HOST_PORT} for all its boxes`);
  if (spec.image !== undefined && spec.image !== settings.image)
    return refusal(`spec.image ${spec.image}`, `the host runs ${settings.image} for all its boxes`);
  if (spec.serviceAccountName !== undefined) return refusal('spec.serviceAccountName', "the host's pods run as the host's ServiceAccount");
  if (usesTokenReview(box))
    return refusal('tokenreview (spec.clusterIssuer or spec.trustedIssuers)', "the host's ServiceAccount may not review tokens");
  return undefined;
}

/** The Host header values the box is asked at: the names of its Service, and the host[:port] of its base URL. */
export function hostnamesOf(box: BoxResource): string[] {
  const service = boxNames(box).service;
  const ns = box.metadata.namespace!;
  const names = [`${service}.${ns}.svc`, `${service}.${ns}.svc.cluster.local`, `${service}.${ns}`, new URL(baseUrlOf(box)).host];
  return [...new Set(names.map((n) => n.toLowerCase()))];
}

/** Thrown when a Secret the box's variables refer to lacks the key: the registry must not hold a half entry. */
export class MissingSecretValue extends Error {}

/**
 * The box's registry entry: apiEnv() with each Secret reference replaced by its value, from `secrets` (by name: the
 * Secrets the reconcile has just read or written). Variables sorted by name, so that an unchanged box renders the same.
 */
export function registryEntry(box: BoxResource, pooled: boolean, secrets: ReadonlyMap<string, SecretObject>): RegistryEntry {
  const env: Record<string, string> = {};
  for (const v of apiEnv(box, { pooled }).sort((a, b) => a.name.localeCompare(b.name))) env[v.name] = valueOf(box, v, secrets);
  return { box: `${box.metadata.namespace}/${box.metadata.name}`, hostnames: hostnamesOf(box), env };
}

function valueOf(box: BoxResource, v: EnvVar, secrets: ReadonlyMap<string, SecretObject>): string {
  if (v.value !== undefined) return v.value;
  const ref = v.valueFrom!.secretKeyRef;
  const value = secretValue(secrets.get(ref.name), ref.key);
  if (value === undefined) throw new MissingSecretValue(`Secret ${box.metadata.namespace}/${ref.name} has no key ${ref.key} (${v.name})`);
  return value;
}

/** The Secret names apiEnv() refers to: what registryEntry() needs in `secrets`. */
export function envSecretNames(box: BoxResource, pooled: boolean): string[] {
  return [...new Set(apiEnv(box, { pooled }).flatMap((v) => (v.valueFrom ? [v.valueFrom.secretKeyRef.name] : [])))];
}

/** The registry's text: entries sorted by box, each as registryEntry() made it; the same set makes the same bytes. */
export function registryText(entries: RegistryEntry[]): string {
  return `${JSON.stringify({ boxes: [...entries].sort((a, b) => a.box.localeCompare(b.box)) }, null, 1)}\n`;
}

export function registrySecret(settings: HostSettings, text: string): KObject {
  return {
    metadata: { name: REGISTRY_SECRET, namespace: settings.namespace, labels: { ...hostLabels, ...MANAGED_LABELS } },
    type: 'Opaque',
    data: { [REGISTRY_KEY]: Buffer.from(text, 'utf8').toString('base64') },
  };
}

export function hostServiceAccount(settings: HostSettings): KObject {
  // No Role or binding: a box's `clusterIssuer: auto` reads the cluster's issuer and keys (OIDC discovery), which
  // every ServiceAccount may; it needs the token mounted, and nothing more.
  return { metadata: { name: HOST_NAME, namespace: settings.namespace, labels: { ...hostLabels, ...MANAGED_LABELS } } };
}

export function hostService(settings: HostSettings): KObject {
  return {
    metadata: { name: HOST_NAME, namespace: settings.namespace, labels: { ...hostLabels, ...MANAGED_LABELS } },
    spec: {
      selector: hostLabels,
      // The metrics port stays off the Service: hosted boxes' names are ExternalNames of it, and a box's app must not
      // read the host's series of every box (the chart's PodMonitor scrapes the pods' port `metrics`).
      ports: HOST_SERVICE_PORTS.map((port) => ({
        name: port === HOST_PORT ? 'http' : `http-${port}`,
        port,
        targetPort: 'http',
        protocol: 'TCP',
        appProtocol: 'http',
      })),
    },
  };
}

/** The field manager that holds the host's replicas between the operator's apply and the scaler's first write. */
export const REPLICAS_HANDOVER_MANAGER = 'boxauth-operator-handover';

/** Whether the operator's own apply holds the Deployment's spec.replicas (its managedFields). */
export function appliesReplicas(deployment: KObject): boolean {
  return (deployment.metadata.managedFields ?? []).some(
    (f) =>
      f.manager === FIELD_MANAGER &&
      f.operation === 'Apply' &&
      (f.fieldsV1?.['f:spec'] as Record<string, unknown> | undefined)?.['f:replicas'] !== undefined,
  );
}

/**
 * The host's replicas at their present value, applied as REPLICAS_HANDOVER_MANAGER once the setting is `auto` and
 * before the operator's apply stops sending them: a field its only manager stops applying is removed, and a
 * Deployment without replicas has 1, so the host would fall to one pod until its HPA acted. Held by a second
 * manager, the field keeps its value; the HPA's first change takes it (Kubernetes' server-side apply, "transferring
 * ownership").
 */
export function replicasHandover(settings: HostSettings, replicas: number): KObject {
  return { metadata: { name: HOST_NAME, namespace: settings.namespace }, spec: { replicas } };
}

export function hostDeployment(settings: HostSettings): KObject {
  const labels = { ...hostLabels, ...MANAGED_LABELS };
  const probe = (path: string) => ({ httpGet: { path, port: 'http', scheme: 'HTTP' } });
  return {
    metadata: { name: HOST_NAME, namespace: settings.namespace, labels },
    spec: {
      // 'auto': sent by no one but the scaler, so the apply neither owns nor resets it (hostReplicasHandover).
      ...(settings.replicas === 'auto' ? {} : { replicas: settings.replicas }),
      selector: { matchLabels: hostLabels },
      template: {
        metadata: { labels },
        spec: {
          serviceAccountName: HOST_NAME,
          // The default clusterIssuer (auto) of a box reads the cluster's keys with the pod's token.
          automountServiceAccountToken: true,
          enableServiceLinks: false,
          securityContext: { runAsNonRoot: true, runAsUser: 10001, runAsGroup: 10001, seccompProfile: { type: 'RuntimeDefault' } },
          containers: [
            {
              name: 'host',
              image: settings.image,
              imagePullPolicy: settings.imagePullPolicy,
              command: API_COMMAND,
              // The API's port first: what runs a pod locally (run-box.ts, the tests) answers on ports[0].
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
              lifecycle: { preStop: { sleep: { seconds: PRE_STOP_SECONDS } } },
              // At the pod's address the host answers its own /healthz and /readyz (ready once the boxes it started
              // with are prepared); a box's are asked with the box's name as Host.
              readinessProbe: { ...probe('/readyz'), periodSeconds: 5, failureThreshold: 3 },
              livenessProbe: { ...probe('/healthz'), initialDelaySeconds: 10, periodSeconds: 10, failureThreshold: 6 },
              resources: settings.resources,
              securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } },
              volumeMounts: [
                { name: 'tmp', mountPath: '/tmp' },
                { name: 'registry', mountPath: REGISTRY_DIR, readOnly: true },
              ],
            },
          ],
          // Mounted whole (no subPath): the kubelet swaps the file when the operator rewrites the Secret, and the host
          // reads it again; no roll.
          volumes: [
            { name: 'tmp', emptyDir: {} },
            { name: 'registry', secret: { secretName: REGISTRY_SECRET } },
          ],
        },
      },
    },
  };
}
