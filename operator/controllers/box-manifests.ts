// The Deployment and Service of a box's API, as the operator applies them. The
// Deployment carries all of the API's configuration in its environment (values,
// or references to the Secrets the operator wrote): the same BOXAUTH_*
// variables `make run` reads (api/config.ts). Its container command runs
// unchanged from a checkout after `make build` too. Its pods run as the Box's
// own ServiceAccount, which may review tokens (system:auth-delegator) when an
// issuer the box trusts is checked by TokenReview. With spec.tls they serve
// HTTPS with the certificate of that Secret, mounted as files. Their metrics
// are on a container port named `metrics`, which the chart's PodMonitor scrapes
// in every namespace, and which the Service leaves out (it is not for clients).
// The decision point's gRPC door (Envoy ext_authz, as Istio CUSTOM and Envoy
// Gateway call it) is on a port of its own, `grpc-authz`, which the Service
// does carry: gateways reach it there.
import { createHash } from 'node:crypto';
import { BRANDING_VARIABLES, DEFAULT_GRPC_PORT, DEFAULT_METRICS_PORT, PASSWORD_MIN_LENGTH } from '../../api/public.js';
import type { KObject } from '../kube.js';
import { MANAGED_LABELS, ownerReference } from '../owned.js';
import type { BoxResource, BoxSpec } from './box/types.js';

export const API_COMMAND = ['node', 'dist/api/main.js'];
export const ROOT_CLIENT_ID = 'root';
export const SIGNING_KEY_FILE = 'signing-key.pem';
/** The key of the factor key Secret: 32 random bytes in base64, as BOXAUTH_FACTOR_KEY takes them. */
export const FACTOR_KEY_FILE = 'factor-key';
/** The keys of the Secret <box>-database: where the API pods send their queries, and (through a pooler) where the primary itself is. */
export const DATABASE_URL_KEY = 'DATABASE_URL';
export const DATABASE_DIRECT_KEY = 'DATABASE_DIRECT_URL';
/** The keys of a kubernetes.io/tls Secret (what cert-manager writes), which spec.tls.secretName must have. */
export const TLS_KEYS = { cert: 'tls.crt', key: 'tls.key' } as const;
const TLS_DIR = '/etc/boxauth/tls';
const MAIL_TEMPLATES_DIR = '/etc/boxauth/mail-templates';
/** The Service answers on the scheme's own port, so the default base URL needs none. */
const SERVICE_PORTS = { http: 80, https: 443 } as const;
// How a box pod stops (the pod's default 30 s grace covers both and BOXAUTH_SHUTDOWN_TIMEOUT_MS's 10 s drain).
const PRE_STOP_SECONDS = 5;
const SHUTDOWN_DELAY_MS = 2000;
/** The name of the pods' and the Service's gRPC decision port: Istio reads a protocol from a `grpc-` prefix. */
export const GRPC_PORT_NAME = 'grpc-authz';

export interface BoxNames {
  deployment: string;
  service: string;
  /** The ServiceAccount the operator creates for the API pods (unless spec.serviceAccountName names another). */
  serviceAccount: string;
  secrets: { database: string; signingKey: string; factorKey: string; rootClient: string; admin: string };
}

export function boxNames(box: BoxResource): BoxNames {
  const name = box.metadata.name;
  return {
    deployment: name,
    service: name,
    serviceAccount: name,
    secrets: {
      database: `${name}-database`,
      signingKey: `${name}-signing-key`,
      factorKey: `${name}-factor-key`,
      rootClient: `${name}-root-client`,
      admin: `${name}-admin`,
    },
  };
}

/** How the API pods answer: HTTPS when spec.tls gives them a certificate. */
export function schemeOf(box: BoxResource): 'http' | 'https' {
  return box.spec?.tls ? 'https' : 'http';
}

export function baseUrlOf(box: BoxResource): string {
  return (box.spec?.baseUrl ?? `${schemeOf(box)}://${box.metadata.name}.${box.metadata.namespace}.svc`).replace(/\/+$/, '');
}

/** Where gateways call the gRPC decision point (status.grpcAuthz): the Service's port, by the cluster's short name. */
export function grpcAuthzAddress(box: BoxResource): string {
  return `${boxNames(box).service}.${box.metadata.namespace}.svc:${DEFAULT_GRPC_PORT}`;
}

export function selectorLabels(box: BoxResource): Record<string, string> {
  return {
    'app.kubernetes.io/name': 'boxauth',
    'app.kubernetes.io/instance': box.metadata.name,
    'app.kubernetes.io/component': 'api',
  };
}

/** The ServiceAccount of the API pods: spec.serviceAccountName, else the one the operator creates. */
export function podServiceAccount(box: BoxResource): string {
  return box.spec?.serviceAccountName ?? boxNames(box).serviceAccount;
}

/** Workload identity reads the cluster's issuer and keys, or has tokens reviewed, with the pod's own token. */
export function needsApiServer(box: BoxResource): boolean {
  return (box.spec?.clusterIssuer ?? 'auto') !== 'off' || usesTokenReview(box);
}

/** Some issuer is checked by asking the API server (TokenReview): the pods need system:auth-delegator. */
export function usesTokenReview(box: BoxResource): boolean {
  return box.spec?.clusterIssuer === 'tokenreview' || (box.spec?.trustedIssuers ?? []).some((i) => i.mode === 'tokenreview');
}

/** Whether Clients of the box may bind ServiceAccounts of this namespace: its own, those listed, or any with "*". */
export function allowsWorkloadNamespace(box: BoxResource, namespace: string): boolean {
  const listed = box.spec?.workloadNamespaces ?? [];
  return namespace === box.metadata.namespace || listed.includes('*') || listed.includes(namespace);
}

const secretEnv = (name: string, secret: string, key: string): EnvVar => ({ name, valueFrom: { secretKeyRef: { name: secret, key } } });

/** spec.smtp as the box reads it (api/config.ts): the URL and From as values, the password from its Secret, the templates mounted. */
function smtpEnv(smtp: NonNullable<BoxSpec['smtp']>): EnvVar[] {
  return [
    { name: 'BOXAUTH_SMTP_URL', value: smtp.url },
    { name: 'BOXAUTH_SMTP_FROM', value: smtp.from },
    ...(smtp.passwordSecretRef ? [secretEnv('BOXAUTH_SMTP_PASSWORD', smtp.passwordSecretRef.name, smtp.passwordSecretRef.key)] : []),
    ...(smtp.templates ? [{ name: 'BOXAUTH_MAIL_TEMPLATES', value: MAIL_TEMPLATES_DIR }] : []),
    ...(smtp.signInCodes && smtp.signInCodes !== 'off' ? [{ name: 'BOXAUTH_SMTP_SIGN_IN_CODES', value: smtp.signInCodes }] : []),
  ];
}

export interface DeploymentSettings {
  image: string;
  imagePullPolicy: string;
  /** resourceVersions of the Secrets the pods read through their environment, once, at start: a change rolls the pods. */
  secretVersions: string[];
  /** Their queries go through a transaction pooler: <box>-database has the direct URL too (DATABASE_DIRECT_KEY). */
  pooled?: boolean;
}

/** A container's environment variable: a value, or a key of a Secret of the box's namespace. */
export interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef: { name: string; key: string } };
}

/**
 * The box's variables (api/config.ts), as its Deployment's container has them: the one list a dedicated pod and a
 * hosted box's registry entry (./host-manifests.ts, with the Secrets' values in place of the references) are made from.
 */
export function apiEnv(box: BoxResource, { pooled }: Pick<DeploymentSettings, 'pooled'>): EnvVar[] {
  const spec = box.spec ?? {};
  const names = boxNames(box);
  const port = spec.port ?? 8080;
  return [
    { name: 'BOXAUTH_BOX', value: `${box.metadata.namespace}/${box.metadata.name}` },
    { name: 'BOXAUTH_PORT', value: String(port) },
    { name: 'BOXAUTH_METRICS_PORT', value: String(DEFAULT_METRICS_PORT) },
    // Said, not left to the image's default: spec.image may run another version, and the Service points at this port.
    { name: 'BOXAUTH_GRPC_PORT', value: String(DEFAULT_GRPC_PORT) },
    { name: 'BOXAUTH_HOST', value: '0.0.0.0' },
    { name: 'BOXAUTH_BASE_URL', value: baseUrlOf(box) },
    { name: 'BOXAUTH_DATA_DIR', value: '/tmp/boxauth' },
    secretEnv('DATABASE_URL', names.secrets.database, DATABASE_URL_KEY),
    // Through a transaction pooler, what needs a session of its own (the change feed's LISTEN, the migrations' lock)
    // goes to the primary directly; without one, the API takes DATABASE_URL for both.
    ...(pooled ? [secretEnv('BOXAUTH_DATABASE_DIRECT_URL', names.secrets.database, DATABASE_DIRECT_KEY)] : []),
    { name: 'BOXAUTH_ROOT_CLIENT_ID', value: ROOT_CLIENT_ID },
    secretEnv('BOXAUTH_ROOT_CLIENT_SECRET', names.secrets.rootClient, 'client-secret'),
    { name: 'BOXAUTH_ADMIN_EMAIL', value: spec.admin?.email ?? 'admin@localhost' },
    secretEnv('BOXAUTH_ADMIN_PASSWORD', names.secrets.admin, 'password'),
    { name: 'BOXAUTH_REGISTRATION', value: String(spec.registration ?? false) },
    { name: 'BOXAUTH_PASSWORD_MIN_LENGTH', value: String(spec.passwordMinLength ?? PASSWORD_MIN_LENGTH.default) },
    // The branding the CRD's schema checked; the box checks it again at start (api/branding.ts).
    ...Object.entries(BRANDING_VARIABLES).flatMap(([field, name]) => {
      const value = spec.branding?.[field as keyof typeof BRANDING_VARIABLES];
      return value === undefined ? [] : [{ name, value }];
    }),
    { name: 'BOXAUTH_JWT_ALG', value: spec.jwtAlg ?? 'ES256' },
    secretEnv('BOXAUTH_SIGNING_KEY', names.secrets.signingKey, SIGNING_KEY_FILE),
    secretEnv('BOXAUTH_FACTOR_KEY', names.secrets.factorKey, FACTOR_KEY_FILE),
    { name: 'BOXAUTH_LOG_LEVEL', value: spec.logLevel ?? 'info' },
    ...(spec.tracing ? tracingEnv(spec.tracing) : []),
    ...(spec.publicSubjects ? [{ name: 'BOXAUTH_PUBLIC_SUBJECTS', value: spec.publicSubjects }] : []),
    // After SIGTERM (and the preStop pause below), two seconds of answers with Connection: close: the
    // clients' keep-alive connections end cleanly, not under a request (docs/kubernetes/laptop-cluster.md).
    { name: 'BOXAUTH_SHUTDOWN_DELAY_MS', value: String(SHUTDOWN_DELAY_MS) },
    { name: 'BOXAUTH_CLUSTER_ISSUER', value: spec.clusterIssuer ?? 'auto' },
    ...(spec.trustedIssuers?.length ? [{ name: 'BOXAUTH_TRUSTED_ISSUERS', value: JSON.stringify(spec.trustedIssuers) }] : []),
    ...(spec.spiffeTrustDomains?.length ? [{ name: 'BOXAUTH_SPIFFE_TRUST_DOMAINS', value: JSON.stringify(spec.spiffeTrustDomains) }] : []),
    ...(spec.tls
      ? [
          { name: 'BOXAUTH_TLS_CERT_FILE', value: `${TLS_DIR}/${TLS_KEYS.cert}` },
          { name: 'BOXAUTH_TLS_KEY_FILE', value: `${TLS_DIR}/${TLS_KEYS.key}` },
        ]
      : []),
    ...(spec.smtp ? smtpEnv(spec.smtp) : []),
  ];
}

/** Box.spec.tracing as the OpenTelemetry SDK's variables the box reads (api/config.ts tracingOf). */
function tracingEnv(tracing: NonNullable<BoxSpec['tracing']>): EnvVar[] {
  return [
    { name: 'OTEL_TRACES_EXPORTER', value: 'otlp' },
    { name: 'OTEL_EXPORTER_OTLP_ENDPOINT', value: tracing.endpoint },
    ...(tracing.sampler ? [{ name: 'OTEL_TRACES_SAMPLER', value: tracing.sampler }] : []),
    ...(tracing.ratio !== undefined ? [{ name: 'OTEL_TRACES_SAMPLER_ARG', value: String(tracing.ratio) }] : []),
  ];
}

export function apiDeployment(box: BoxResource, settings: DeploymentSettings): KObject {
  const spec = box.spec ?? {};
  const names = boxNames(box);
  const port = spec.port ?? 8080;
  const scheme = schemeOf(box);
  const labels = { ...selectorLabels(box), ...MANAGED_LABELS };
  const env = apiEnv(box, settings);
  const templates = spec.smtp?.templates?.configMapRef.name;
  const probeScheme = scheme.toUpperCase();
  const configHash = createHash('sha256').update(settings.secretVersions.join(',')).digest('hex').slice(0, 16);
  return {
    metadata: { name: names.deployment, namespace: box.metadata.namespace, labels, ownerReferences: [ownerReference(box)] },
    spec: {
      replicas: spec.replicas ?? 1,
      selector: { matchLabels: selectorLabels(box) },
      template: {
        metadata: { labels, annotations: { 'boxauth.io/config-hash': configHash } },
        spec: {
          serviceAccountName: podServiceAccount(box),
          automountServiceAccountToken: needsApiServer(box),
          enableServiceLinks: false,
          securityContext: { runAsNonRoot: true, runAsUser: 10001, runAsGroup: 10001, seccompProfile: { type: 'RuntimeDefault' } },
          containers: [
            {
              name: 'api',
              image: spec.image ?? settings.image,
              imagePullPolicy: settings.imagePullPolicy,
              command: API_COMMAND,
              // The API's port first: what runs a pod locally (run-box.ts, the tests) answers on ports[0].
              ports: [
                { name: scheme, containerPort: port, protocol: 'TCP' },
                { name: GRPC_PORT_NAME, containerPort: DEFAULT_GRPC_PORT, protocol: 'TCP' },
                { name: 'metrics', containerPort: DEFAULT_METRICS_PORT, protocol: 'TCP' },
              ],
              env,
              // A pod being deleted leaves its Service's endpoints while the kubelet stops it: kube-proxy and
              // gateways take a moment to stop sending it new connections. The pause lets them, with the
              // listener still open, before SIGTERM; any image, the previous release's too, gets it.
              lifecycle: { preStop: { sleep: { seconds: PRE_STOP_SECONDS } } },
              readinessProbe: { httpGet: { path: '/readyz', port: scheme, scheme: probeScheme }, periodSeconds: 5, failureThreshold: 3 },
              livenessProbe: {
                httpGet: { path: '/healthz', port: scheme, scheme: probeScheme },
                initialDelaySeconds: 10,
                periodSeconds: 10,
                failureThreshold: 6,
              },
              resources: spec.resources ?? { requests: { cpu: '50m', memory: '128Mi' }, limits: { memory: '512Mi' } },
              securityContext: { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } },
              volumeMounts: [
                { name: 'tmp', mountPath: '/tmp' },
                ...(spec.tls ? [{ name: 'tls', mountPath: TLS_DIR, readOnly: true }] : []),
                ...(templates ? [{ name: 'mail-templates', mountPath: MAIL_TEMPLATES_DIR, readOnly: true }] : []),
              ],
            },
          ],
          // The kubelet updates a Secret volume in place (no subPath here, which would freeze it): a renewed certificate
          // reaches the running pods, which re-read it (api/http/tls.ts).
          volumes: [
            { name: 'tmp', emptyDir: {} },
            ...(spec.tls ? [{ name: 'tls', secret: { secretName: spec.tls.secretName } }] : []),
            ...(templates ? [{ name: 'mail-templates', configMap: { name: templates } }] : []),
          ],
        },
      },
    },
  };
}

/**
 * The box's Service: its pods' (type ClusterIP), or, for a hosted box, an ExternalName to the host's Service (`hostedAt`),
 * under the same name, so that apps' URLs and the issuer stay as they were. Applied over one another by server-side
 * apply, either way: the fields the operator sent before and sends no more go (type: ExternalName
 * back to the default ClusterIP; selector, externalName), the API server drops the cluster IP of a Service that becomes
 * an ExternalName and allocates one to a Service that stops being one.
 */
export function apiService(box: BoxResource, hostedAt?: string): KObject {
  const scheme = schemeOf(box);
  const metadata = {
    name: boxNames(box).service,
    namespace: box.metadata.namespace,
    labels: { ...selectorLabels(box), ...MANAGED_LABELS },
    ownerReferences: [ownerReference(box)],
  };
  if (hostedAt) {
    // The port says what the host's Service answers on (80, as the box's own did), for gateways that route to a
    // Service's port; a hosted box has no gRPC decision port (ext_authz is served by dedicated boxes).
    return {
      metadata,
      spec: { type: 'ExternalName', externalName: hostedAt, ports: [{ name: 'http', port: SERVICE_PORTS.http, protocol: 'TCP' }] },
    };
  }
  return {
    metadata,
    spec: {
      selector: selectorLabels(box),
      ports: [
        // appProtocol tells Ingress and Gateway controllers to speak TLS to the pods when they serve HTTPS.
        { name: scheme, port: SERVICE_PORTS[scheme], targetPort: scheme, protocol: 'TCP', appProtocol: scheme },
        // `grpc` is what both Istio and Envoy Gateway read as HTTP/2 (Istio builds its ext_authz cluster from it).
        // `kubernetes.io/h2c` is Gateway API's and Envoy Gateway's only, and as appProtocol wins over the name, it
        // would hide the `grpc-` prefix from an Istio that does not know it. With spec.tls the port serves TLS:
        // gateways are told so where they originate TLS (DestinationRule, BackendTLSPolicy), as no appProtocol says it.
        { name: GRPC_PORT_NAME, port: DEFAULT_GRPC_PORT, targetPort: GRPC_PORT_NAME, protocol: 'TCP', appProtocol: 'grpc' },
      ],
    },
  };
}

/** The API pods' own ServiceAccount (when spec.serviceAccountName does not name one). */
export function apiServiceAccount(box: BoxResource): KObject {
  return {
    metadata: {
      name: boxNames(box).serviceAccount,
      namespace: box.metadata.namespace,
      labels: { ...selectorLabels(box), ...MANAGED_LABELS },
      ownerReferences: [ownerReference(box)],
    },
  };
}

/**
 * The subject of system:auth-delegator for the API pods' ServiceAccount: it may create TokenReviews.
 * It goes into the chart's one ClusterRoleBinding (./box/identity.ts), never into a binding of its own:
 * the operator may create and delete no ClusterRoleBinding.
 */
export function tokenReviewSubject(box: BoxResource): { kind: 'ServiceAccount'; name: string; namespace: string } {
  return { kind: 'ServiceAccount', name: podServiceAccount(box), namespace: box.metadata.namespace! };
}
