// The operator's Kubernetes API transport. @kubernetes/client-node's KubeConfig
// loads the credentials (kubeconfig, in-cluster token file, exec plugins) and
// applies them to each request; requests and watches are plain JSON over node's
// https, so objects from a list, a watch and a GET have one shape, status
// subresources and server-side apply need no special API class, and every call
// (a watch included) can be aborted and timed out.
import http from 'node:http';
import https from 'node:https';
import { KubeConfig } from '@kubernetes/client-node';

export interface ObjectMeta {
  name: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  ownerReferences?: OwnerReference[];
  /** Which field manager holds which fields (server-side apply), in the API server's FieldsV1 form. */
  managedFields?: { manager?: string; operation?: string; fieldsV1?: Record<string, unknown> }[];
}

export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

/** A Kubernetes object as JSON: what lists, watches and GETs return (timestamps are strings). */
export interface KObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  [field: string]: unknown;
}

/** A resource type: where its objects live in the API. */
export interface ResourceType {
  group: string;
  version: string;
  plural: string;
  kind: string;
}

export const BOXAUTH_GROUP = 'boxauth.io';
export const BOXAUTH_VERSION = 'v1alpha1';
const boxauth = (kind: string, plural: string): ResourceType => ({ group: BOXAUTH_GROUP, version: BOXAUTH_VERSION, plural, kind });

export const BOXES = boxauth('Box', 'boxes');
export const CLIENTS = boxauth('Client', 'clients');
export const ACCESS_POLICIES = boxauth('AccessPolicy', 'accesspolicies');
export const APPS = boxauth('App', 'apps');
export const IDENTITY_PROVIDERS = boxauth('IdentityProvider', 'identityproviders');
export const WEBHOOKS = boxauth('Webhook', 'webhooks');
export const HOOKS = boxauth('Hook', 'hooks');
export const SECRETS: ResourceType = { group: '', version: 'v1', plural: 'secrets', kind: 'Secret' };
export const SERVICES: ResourceType = { group: '', version: 'v1', plural: 'services', kind: 'Service' };
export const EVENTS: ResourceType = { group: '', version: 'v1', plural: 'events', kind: 'Event' };
export const SERVICE_ACCOUNTS: ResourceType = { group: '', version: 'v1', plural: 'serviceaccounts', kind: 'ServiceAccount' };
export const CLUSTER_ROLE_BINDINGS: ResourceType = {
  group: 'rbac.authorization.k8s.io',
  version: 'v1',
  plural: 'clusterrolebindings',
  kind: 'ClusterRoleBinding',
};
export const DEPLOYMENTS: ResourceType = { group: 'apps', version: 'v1', plural: 'deployments', kind: 'Deployment' };
export const LEASES: ResourceType = { group: 'coordination.k8s.io', version: 'v1', plural: 'leases', kind: 'Lease' };
/** CloudNativePG's PostgreSQL clusters and PgBouncer poolers, which a Box may name (spec.database.cluster): read only. */
export const CNPG_CLUSTERS: ResourceType = { group: 'postgresql.cnpg.io', version: 'v1', plural: 'clusters', kind: 'Cluster' };
export const CNPG_POOLERS: ResourceType = { group: 'postgresql.cnpg.io', version: 'v1', plural: 'poolers', kind: 'Pooler' };

export function apiVersionOf(type: ResourceType): string {
  return type.group ? `${type.group}/${type.version}` : type.version;
}

/** The path of a collection (all namespaces when namespace is undefined) or of one object. */
export function resourcePath(type: ResourceType, namespace?: string, name?: string, subresource?: string): string {
  const base = type.group ? `/apis/${type.group}/${type.version}` : `/api/${type.version}`;
  let path = namespace ? `${base}/namespaces/${encodeURIComponent(namespace)}/${type.plural}` : `${base}/${type.plural}`;
  if (name) path += `/${encodeURIComponent(name)}`;
  if (subresource) path += `/${subresource}`;
  return path;
}

/** An answer other than 2xx, with the API server's Status reason and message. */
export class KubeError extends Error {
  constructor(
    readonly status: number,
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }
}

export const isNotFound = (err: unknown): boolean => err instanceof KubeError && err.status === 404;
export const isConflict = (err: unknown): boolean => err instanceof KubeError && err.status === 409;
export const isGone = (err: unknown): boolean => err instanceof KubeError && err.status === 410;

export const PATCH = {
  merge: 'application/merge-patch+json',
  json: 'application/json-patch+json',
  apply: 'application/apply-patch+yaml',
} as const;

export interface RequestOptions {
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  contentType?: string;
  accept?: string;
  timeoutMs?: number;
  signal?: AbortSignal;
}

export const FIELD_MANAGER = 'boxauth-operator';

/**
 * The API server as the controllers, leader election and the Event recorder
 * use it: objects by type, namespace and name. HttpKube speaks it to a real
 * API server; the unit tests keep the objects in memory (test/support/fake-kube.ts).
 */
export interface Kube {
  get<T = KObject>(type: ResourceType, namespace: string | undefined, name: string): Promise<T>;
  /** The object, or undefined when it does not exist. */
  find<T = KObject>(type: ResourceType, namespace: string | undefined, name: string): Promise<T | undefined>;
  create<T = KObject>(type: ResourceType, namespace: string | undefined, body: unknown): Promise<T>;
  replace<T = KObject>(type: ResourceType, namespace: string | undefined, name: string, body: unknown): Promise<T>;
  patch<T = KObject>(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
    body: unknown,
    contentType?: string,
    subresource?: string,
  ): Promise<T>;
  /** Deletes the object; false when it was already gone. */
  delete(type: ResourceType, namespace: string | undefined, name: string): Promise<boolean>;
  /**
   * Server-side apply: the operator owns the fields it sends, and takes them back from anyone who changed them.
   * `as`: another field manager of the operator's, and whether it takes fields from others (a conflict is 409 without).
   */
  apply<T = KObject>(type: ResourceType, namespace: string | undefined, object: KObject, as?: ApplyAs): Promise<T>;
}

/** Who applies: a field manager and whether it forces its values over other managers'. */
export interface ApplyAs {
  fieldManager: string;
  force: boolean;
}

/** What a request to the API server is, as kube-apiserver's own metrics name it: verb and resource (with subresource). */
export interface RequestKind {
  verb: 'get' | 'list' | 'watch' | 'create' | 'update' | 'patch' | 'delete';
  resource: string;
}

/** The verb and resource of a request: a GET of a collection is a list, one with watch=1 a watch. */
export function requestKind(method: string, path: string, query: RequestOptions['query'] = {}): RequestKind {
  let parts = path.split('?')[0]!.split('/').filter(Boolean);
  parts = parts[0] === 'api' ? parts.slice(2) : parts.slice(3); // api/v1/..., apis/<group>/<version>/...
  if (parts[0] === 'namespaces' && parts.length > 2) parts = parts.slice(2);
  const [resource = '', name, subresource] = parts;
  const verbs: Record<string, RequestKind['verb']> = { POST: 'create', PUT: 'update', PATCH: 'patch', DELETE: 'delete' };
  const verb = method === 'GET' ? (query.watch ? 'watch' : name ? 'get' : 'list') : (verbs[method] ?? 'get');
  return { verb, resource: subresource ? `${resource}/${subresource}` : resource };
}

export class HttpKube implements Kube {
  private readonly server: URL;
  private agent: http.Agent | undefined;
  private agentKey = '';
  /** Told of every request, before it is sent (the operator counts them: boxauth_operator_api_requests_total). */
  onRequest: ((kind: RequestKind) => void) | undefined;

  constructor(readonly config: KubeConfig) {
    const cluster = config.getCurrentCluster();
    if (!cluster) throw new Error('the kubeconfig has no current cluster');
    this.server = new URL(cluster.server);
  }

  /** KUBECONFIG (or ~/.kube/config), or the in-cluster service account. */
  static fromEnvironment(): HttpKube {
    const kc = new KubeConfig();
    kc.loadFromDefault();
    return new HttpKube(kc);
  }

  /** The default namespace of the current context (out of cluster) or of the pod. */
  get contextNamespace(): string | undefined {
    return this.config.getContextObject(this.config.getCurrentContext())?.namespace;
  }

  private async open(method: string, path: string, opts: RequestOptions): Promise<http.ClientRequest> {
    this.onRequest?.(requestKind(method, path, opts.query));
    const url = new URL(path, this.server);
    for (const [k, v] of Object.entries(opts.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const options: https.RequestOptions = {
      method,
      protocol: url.protocol,
      hostname: url.hostname,
      port: url.port,
      path: `${url.pathname}${url.search}`,
      headers: {
        Accept: opts.accept ?? 'application/json',
        ...(opts.body !== undefined ? { 'Content-Type': opts.contentType ?? 'application/json' } : {}),
      },
    };
    await this.applyCredentials(options);
    const transport = url.protocol === 'https:' ? https : http;
    const req = transport.request(options);
    if (opts.signal) {
      // Destroyed without an error: the socket may already be back in the agent's pool, where an error would go unheard.
      const abort = (): void => {
        setImmediate(() => req.destroy());
      };
      if (opts.signal.aborted) abort();
      else opts.signal.addEventListener('abort', abort, { once: true });
      req.once('close', () => opts.signal!.removeEventListener('abort', abort));
    }
    return req;
  }

  /**
   * Credentials (a fresh token, client certificates) from the KubeConfig. It
   * builds a new agent for every request, which would make every request a new
   * TLS connection; one keep-alive agent serves instead while the TLS material
   * stays the same (a proxy agent is kept as the KubeConfig made it).
   */
  private async applyCredentials(options: https.RequestOptions): Promise<void> {
    await this.config.applyToHTTPSOptions(options);
    if (this.config.getCurrentCluster()?.proxyUrl) return;
    const tls = { ca: options.ca, cert: options.cert, key: options.key, rejectUnauthorized: options.rejectUnauthorized };
    const key = JSON.stringify(tls);
    if (!this.agent || key !== this.agentKey) {
      this.agent?.destroy();
      const defined = Object.fromEntries(Object.entries(tls).filter(([, v]) => v !== undefined));
      this.agent =
        this.server.protocol === 'https:'
          ? new https.Agent({ keepAlive: true, maxSockets: 32, ...defined })
          : new http.Agent({ keepAlive: true, maxSockets: 32 });
      this.agentKey = key;
    }
    options.agent = this.agent;
  }

  /** One request; the parsed JSON answer, or a KubeError. */
  async request<T = KObject>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
    const req = await this.open(method, path, opts);
    const timeoutMs = opts.timeoutMs ?? 30_000;
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => req.destroy(new Error(`${method} ${path}: no answer in ${timeoutMs} ms`)), timeoutMs);
      req.on('error', (err) => {
        clearTimeout(timer);
        reject(err);
      });
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', (err) => {
          clearTimeout(timer);
          reject(err);
        });
        res.on('end', () => {
          clearTimeout(timer);
          const text = Buffer.concat(chunks).toString('utf8');
          let body: unknown;
          try {
            body = text ? JSON.parse(text) : undefined;
          } catch {
            body = undefined;
          }
          const status = res.statusCode ?? 0;
          if (status >= 200 && status < 300) return resolve(body as T);
          const s = (body ?? {}) as { reason?: string; message?: string };
          reject(new KubeError(status, s.reason ?? String(status), s.message ?? `${method} ${path}: HTTP ${status} ${text.slice(0, 200)}`));
        });
      });
      if (opts.body !== undefined) req.write(typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body));
      req.end();
    });
  }

  /**
   * A streaming GET (a watch): calls onLine for each line of the answer and
   * resolves when the server ends it. Rejects with a KubeError on a non-2xx
   * answer and with the socket's error when the connection breaks or `signal` aborts.
   */
  async stream(path: string, opts: RequestOptions, onLine: (line: string) => void): Promise<void> {
    const req = await this.open('GET', path, opts);
    return new Promise<void>((resolve, reject) => {
      let settled = false;
      const settle = (err?: Error): void => {
        if (settled) return;
        settled = true;
        if (err) reject(err);
        else resolve();
      };
      req.on('error', (err) => settle(err));
      req.on('close', () => settle(new Error('watch connection closed')));
      req.on('response', (res) => {
        const status = res.statusCode ?? 0;
        if (status < 200 || status >= 300) {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            let s: { reason?: string; message?: string } = {};
            try {
              s = JSON.parse(Buffer.concat(chunks).toString('utf8'));
            } catch {
              /* not a Status */
            }
            settle(new KubeError(status, s.reason ?? String(status), s.message ?? `watch ${path}: HTTP ${status}`));
          });
          return;
        }
        let buffered = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          buffered += chunk;
          let nl: number;
          while ((nl = buffered.indexOf('\n')) >= 0) {
            const line = buffered.slice(0, nl);
            buffered = buffered.slice(nl + 1);
            if (line.trim()) onLine(line);
          }
        });
        res.on('error', (err) => settle(err));
        res.on('end', () => settle());
        // A connection cut mid-answer may close without 'end' or 'error'.
        res.on('close', () => settle(res.complete ? undefined : new Error('watch connection closed')));
      });
      req.end();
    });
  }

  get<T = KObject>(type: ResourceType, namespace: string | undefined, name: string): Promise<T> {
    return this.request<T>('GET', resourcePath(type, namespace, name));
  }

  async find<T = KObject>(type: ResourceType, namespace: string | undefined, name: string): Promise<T | undefined> {
    try {
      return await this.get<T>(type, namespace, name);
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  create<T = KObject>(type: ResourceType, namespace: string | undefined, body: unknown): Promise<T> {
    return this.request<T>('POST', resourcePath(type, namespace), { body, query: { fieldManager: FIELD_MANAGER } });
  }

  replace<T = KObject>(type: ResourceType, namespace: string | undefined, name: string, body: unknown): Promise<T> {
    return this.request<T>('PUT', resourcePath(type, namespace, name), { body, query: { fieldManager: FIELD_MANAGER } });
  }

  patch<T = KObject>(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
    body: unknown,
    contentType: string = PATCH.merge,
    subresource?: string,
  ): Promise<T> {
    return this.request<T>('PATCH', resourcePath(type, namespace, name, subresource), {
      body,
      contentType,
      query: { fieldManager: FIELD_MANAGER },
    });
  }

  async delete(type: ResourceType, namespace: string | undefined, name: string): Promise<boolean> {
    try {
      await this.request('DELETE', resourcePath(type, namespace, name));
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
  }

  apply<T = KObject>(
    type: ResourceType,
    namespace: string | undefined,
    object: KObject,
    as: ApplyAs = { fieldManager: FIELD_MANAGER, force: true },
  ): Promise<T> {
    return this.request<T>('PATCH', resourcePath(type, namespace, object.metadata.name), {
      body: { apiVersion: apiVersionOf(type), kind: type.kind, ...object },
      contentType: PATCH.apply,
      query: { fieldManager: as.fieldManager, force: as.force },
    });
  }

  close(): void {
    this.agent?.destroy();
  }
}
