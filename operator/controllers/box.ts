// Box resources → a box: its PostgreSQL schema and role, its Secrets (database
// URL, signing key, root client, admin password), its API Deployment and
// Service, all owned by the Box. One Box per namespace: the oldest one wins, a
// second is refused.
//
// Finalizer rule (spec.reclaimPolicy): Retain keeps the schema and hands the
// records of Client/AccessPolicy resources to the REST API (managed_by
// cleared); Delete drops the schema and the role, those that are marked as the
// namespace's (operator/boxdb.ts). The Kubernetes objects go
// with the Box through their ownerReferences, except the cluster-scoped
// ClusterRoleBinding for TokenReview, which the finalizer deletes.
//
// spec.tls names a Secret the operator does not write (cert-manager's, or an
// admin's): the pods get it only once it holds a certificate and key that make
// a pair, and serve HTTPS with it.
import { randomBytes } from 'node:crypto';
import type { JwtAlg } from '../../api/config.js';
import type { Pool } from '../../api/db/pool.js';
import { errorMessage } from '../../api/errors.js';
import { checkPair } from '../../api/http/tls.js';
import { generateKeyPair } from '../../api/oauth/jwt.js';
import { generateSecret } from '../../api/oauth/secrets.js';
import { boxDbNames, databaseOf, NotOwned, urlAs, type BoxDatabases } from '../boxdb.js';
import type { NewCondition } from '../conditions.js';
import { Controller, Problem, type ControllerDeps, type Outcome, type Resource } from '../controller.js';
import type { ObjectCache } from '../informer.js';
import { BOXES, CLUSTER_ROLE_BINDINGS, DEPLOYMENTS, SECRETS, SERVICE_ACCOUNTS, SERVICES, type KObject } from '../kube.js';
import { ensureOwned, MANAGED_LABELS, ownerReference } from '../owned.js';
import { BoxReason, ConditionType } from '../reasons.js';
import { secretData, secretValue, type SecretObject } from '../secrets.js';
import {
  apiDeployment,
  apiService,
  apiServiceAccount,
  baseUrlOf,
  boxNames,
  ROOT_CLIENT_ID,
  SIGNING_KEY_FILE,
  TLS_KEYS,
  tokenReviewBinding,
  usesTokenReview,
} from './box-manifests.js';

export interface BoxSpec {
  replicas?: number;
  port?: number;
  baseUrl?: string;
  registration?: boolean;
  jwtAlg?: JwtAlg;
  admin?: { email?: string };
  logLevel?: string;
  image?: string;
  resources?: Record<string, unknown>;
  database?: { secretRef?: { name: string; key?: string } };
  reclaimPolicy?: 'Retain' | 'Delete';
  clusterIssuer?: 'auto' | 'off' | 'tokenreview';
  trustedIssuers?: { issuer: string; jwksUri?: string; mode?: 'jwks' | 'tokenreview'; caBundle?: string }[];
  serviceAccountName?: string;
  workloadNamespaces?: string[];
  tls?: { secretName: string };
}

export type BoxResource = Resource<BoxSpec>;
type DeploymentObject = KObject & { spec?: { replicas?: number }; status?: { availableReplicas?: number; observedGeneration?: number } };

export const BOX_FINALIZER = 'boxauth.io/box';
const ALG_ANNOTATION = 'boxauth.io/jwt-alg';

export interface BoxSettings {
  /** The operator's own database (DATABASE_URL): boxes without spec.database live there. */
  adminUrl: string;
  /** host[:port] the API pods use for that database, when not the host of adminUrl. */
  boxDatabaseHost: string | undefined;
  image: string;
  imagePullPolicy: string;
}

export class BoxController extends Controller<BoxResource> {
  private readonly readyListeners: ((namespace: string) => void)[] = [];

  constructor(
    informer: ObjectCache<BoxResource>,
    private readonly secrets: ObjectCache<KObject>,
    private readonly deployments: ObjectCache<DeploymentObject>,
    deps: ControllerDeps,
    private readonly databases: BoxDatabases,
    private readonly settings: BoxSettings,
  ) {
    super('box', BOXES, informer, deps);
  }

  /** Called after each successful reconcile of a box: its Clients and AccessPolicies can be (re)written. */
  onReady(listener: (namespace: string) => void): void {
    this.readyListeners.push(listener);
  }

  /** The namespace's box: the oldest Box not being deleted (else the oldest being deleted). */
  activeBox(namespace: string): BoxResource | undefined {
    const order = (b: BoxResource): string => `${b.metadata.deletionTimestamp ? 1 : 0}|${b.metadata.creationTimestamp}|${b.metadata.name}`;
    return this.informer.list(namespace).sort((a, b) => order(a).localeCompare(order(b)))[0];
  }

  /** The pool of the box's database, once this process has provisioned it. */
  pool(box: BoxResource): Pool | undefined {
    return this.activeBox(box.metadata.namespace!)?.metadata.uid === box.metadata.uid
      ? this.databases.pool(box.metadata.namespace!)
      : undefined;
  }

  /** Boxes to reconcile when a Secret or Deployment changes: the owner, and Boxes whose spec.database or spec.tls refers to it. */
  boxesUsing(obj: KObject): string[] {
    const ns = obj.metadata.namespace!;
    const names = new Set<string>();
    for (const o of obj.metadata.ownerReferences ?? []) if (o.kind === 'Box' && o.apiVersion.startsWith('boxauth.io/')) names.add(o.name);
    for (const b of this.informer.list(ns)) if (secretsNamedBy(b).includes(obj.metadata.name)) names.add(b.metadata.name);
    return [...names];
  }

  protected fingerprint(box: BoxResource): string {
    const ns = box.metadata.namespace!;
    const names = boxNames(box);
    const versions = [...Object.values(names.secrets), ...secretsNamedBy(box)].map(
      (n) => this.secrets.get(ns, n)?.metadata.resourceVersion,
    );
    const deployment = this.deployments.get(ns, names.deployment);
    return `${this.activeBox(ns)?.metadata.uid === box.metadata.uid}|${versions.join(',')}|${deployment?.metadata.resourceVersion}|${this.databases.pool(ns) ? 1 : 0}`;
  }

  protected override async forgetObject(namespace: string): Promise<void> {
    if (!this.activeBox(namespace)) await this.databases.forget(namespace);
  }

  protected async reconcile(box: BoxResource): Promise<Outcome> {
    const ns = box.metadata.namespace!;
    const active = this.activeBox(ns);
    if (box.metadata.deletionTimestamp) return this.finalize(box, active?.metadata.uid === box.metadata.uid);
    if (active && active.metadata.uid !== box.metadata.uid) {
      // A duplicate serves nothing: no url, schema or Deployment of its own to show.
      const problem = new Problem(
        BoxReason.DuplicateBox,
        `namespace ${ns} already has Box ${active.metadata.name}; a namespace holds one box: delete this one or use another namespace`,
      );
      await this.markNotReady(box, problem, { fields: {} });
      return { ready: false };
    }
    await this.setFinalizer(box, BOX_FINALIZER, true);
    const names = boxNames(box);
    try {
      const adminUrl = await this.adminUrl(box);
      const database = await this.databaseSecret(box, adminUrl);
      const db = await this.databases.ensure(ns, adminUrl, secretValue(database, 'password')!);
      const secrets = [
        database,
        await this.signingKeySecret(box),
        await this.ensureSecret(box, names.secrets.rootClient, () => ({ 'client-id': ROOT_CLIENT_ID, 'client-secret': generateSecret() })),
        await this.ensureSecret(box, names.secrets.admin, () => ({
          email: box.spec?.admin?.email ?? 'admin@localhost',
          password: generateSecret().slice(0, 24),
        })),
      ];
      // The pods read these through their environment, once, at start: a new version must roll them. Not so the TLS
      // Secret: it is mounted, the kubelet updates its files in place and the box re-reads them (api/http/tls.ts), so a
      // renewed certificate reaches the running pods; rolling them at every renewal would only drop connections.
      const secretVersions = secrets.map((x) => x.metadata.resourceVersion ?? '');
      const serviceAccount = await this.serviceAccount(box);
      const binding = await this.tokenReviewRights(box);
      const tlsProblem = await this.tlsProblem(box);
      if (tlsProblem) {
        // No backoff loop: the Secret informer brings the Box back when that Secret appears or changes (boxesUsing).
        await this.markNotReady(box, tlsProblem);
        return { ready: false };
      }
      await this.kube.apply(SERVICES, ns, apiService(box));
      const deployment = await this.kube.apply<DeploymentObject>(
        DEPLOYMENTS,
        ns,
        apiDeployment(box, {
          image: this.settings.image,
          imagePullPolicy: this.settings.imagePullPolicy,
          secretVersions,
        }),
      );
      const url = baseUrlOf(box);
      await this.markReady(box, {
        reason: BoxReason.Provisioned,
        message: `schema ${db.schema}, Secrets, Deployment ${names.deployment} and Service ${names.service} are in place; the box serves at ${url}`,
        fields: {
          url,
          schema: db.schema,
          deployment: names.deployment,
          service: names.service,
          secrets: names.secrets,
          serviceAccount,
          ...(binding ? { tokenReviewBinding: binding } : {}),
          availableReplicas: deployment.status?.availableReplicas ?? 0,
        },
        conditions: [availability(box, deployment)],
      });
      for (const listener of this.readyListeners) listener(ns);
      return { ready: true };
    } catch (err) {
      await this.markNotReady(box, problemOf(err)).catch(() => undefined);
      // Names held by someone else do not come back by themselves: the periodic resync looks again, without a backoff loop.
      if (err instanceof NotOwned) return { ready: false };
      throw err; // retried with backoff: a database or API server may come back by itself
    }
  }

  /** The administrative URL of the box's database: from spec.database.secretRef, or the operator's own. */
  private async adminUrl(box: BoxResource): Promise<string> {
    const ref = box.spec?.database?.secretRef;
    if (!ref) return this.settings.adminUrl;
    const ns = box.metadata.namespace!;
    const key = ref.key ?? 'DATABASE_URL';
    const secret = await this.kube.find<SecretObject>(SECRETS, ns, ref.name);
    if (!secret) throw new Problem(BoxReason.DatabaseSecretNotFound, `Secret ${ns}/${ref.name} (spec.database.secretRef) does not exist`);
    const url = secretValue(secret, key);
    if (!url || !/^postgres(ql)?:\/\//.test(url)) {
      throw new Problem(BoxReason.DatabaseSecretInvalid, `Secret ${ns}/${ref.name} key "${key}" must hold a postgres:// URL`);
    }
    return url;
  }

  /**
   * Why the Secret of spec.tls cannot be given to the pods (yet): missing (cert-manager writes it once the
   * certificate is issued), without tls.crt or tls.key, or with a pair that does not load. Until it can, the
   * Service and Deployment stay as they are, and pods that run keep serving what they have.
   */
  private async tlsProblem(box: BoxResource): Promise<Problem | undefined> {
    const name = box.spec?.tls?.secretName;
    if (!name) return undefined;
    const ns = box.metadata.namespace!;
    const notReady = (why: string): Problem =>
      new Problem(
        BoxReason.TLSSecretNotReady,
        `Secret ${ns}/${name} (spec.tls.secretName) ${why}; the box's Deployment is not made or changed until it holds a certificate and its key`,
      );
    const secret = await this.kube.find<SecretObject>(SECRETS, ns, name);
    if (!secret) return notReady('does not exist');
    const data = secretData(secret);
    const missing = Object.values(TLS_KEYS).filter((k) => !data[k]);
    if (missing.length) return notReady(`has no ${missing.join(' and ')}`);
    try {
      checkPair({ cert: data[TLS_KEYS.cert]!, key: data[TLS_KEYS.key]! });
    } catch (err) {
      return notReady(`holds no certificate and key that make a pair (${errorMessage(err)})`);
    }
    return undefined;
  }

  /** The Secret with the box role's password and the URL the API pods use. */
  private async databaseSecret(box: BoxResource, adminUrl: string): Promise<SecretObject> {
    const ns = box.metadata.namespace!;
    const name = boxNames(box).secrets.database;
    const host = box.spec?.database?.secretRef ? undefined : this.settings.boxDatabaseHost;
    const { role } = boxDbNames(ns, databaseOf(adminUrl));
    const secret = await this.ensureSecret(box, name, () => {
      const password = randomBytes(24).toString('base64url');
      return { DATABASE_URL: urlAs(adminUrl, role, password, host), username: role, password };
    });
    const data = secretData(secret);
    const wanted = urlAs(adminUrl, role, data.password!, host);
    if (data.DATABASE_URL === wanted && data.username === role) return secret;
    return this.kube.patch<SecretObject>(SECRETS, ns, name, { stringData: { DATABASE_URL: wanted, username: role } });
  }

  /** The signing key; a new one when spec.jwtAlg changed (the API retires the old one, still publishing it). */
  private async signingKeySecret(box: BoxResource): Promise<SecretObject> {
    const alg = box.spec?.jwtAlg ?? 'ES256';
    const pem = (): string => generateKeyPair(alg).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const name = boxNames(box).secrets.signingKey;
    const secret = await this.ensureSecret(box, name, () => ({ [SIGNING_KEY_FILE]: pem() }), { [ALG_ANNOTATION]: alg });
    if (secret.metadata.annotations?.[ALG_ANNOTATION] === alg) return secret;
    this.deps.events.normal(box, BoxReason.SigningKeyReplaced, `generated a new ${alg} signing key (spec.jwtAlg changed)`);
    return this.kube.patch<SecretObject>(SECRETS, box.metadata.namespace, name, {
      metadata: { annotations: { [ALG_ANNOTATION]: alg } },
      stringData: { [SIGNING_KEY_FILE]: pem() },
    });
  }

  /**
   * The Secret's values: created with make() and owned by the Box when absent;
   * used as it is when present (an admin may provide it beforehand); taken over
   * when a deleted Box of the same name left it behind.
   */
  private ensureSecret(
    box: BoxResource,
    name: string,
    make: () => Record<string, string>,
    annotations: Record<string, string> = {},
  ): Promise<SecretObject> {
    return ensureOwned<SecretObject>(this.kube, SECRETS, box, name, () => ({
      metadata: {
        name,
        namespace: box.metadata.namespace,
        labels: { ...MANAGED_LABELS, 'boxauth.io/box': box.metadata.name },
        annotations,
        ownerReferences: [ownerReference(box)],
      },
      type: 'Opaque',
      stringData: make(),
    }));
  }

  /** The ServiceAccount the API pods run as: spec.serviceAccountName, else one of the Box's own. */
  private async serviceAccount(box: BoxResource): Promise<string> {
    if (box.spec?.serviceAccountName) return box.spec.serviceAccountName;
    const ns = box.metadata.namespace!;
    const name = boxNames(box).serviceAccount;
    await ensureOwned(this.kube, SERVICE_ACCOUNTS, box, name, () => apiServiceAccount(box), {
      foreign: () =>
        new Problem(
          BoxReason.ServiceAccountConflict,
          `ServiceAccount ${ns}/${name} exists and is not the operator's; set spec.serviceAccountName to run the box as it, or delete it`,
        ),
    });
    return name;
  }

  /**
   * The ClusterRoleBinding of system:auth-delegator to the pods' ServiceAccount
   * while the box has tokens reviewed by the API server; deleted when it no
   * longer does. Its name, when it exists.
   */
  private async tokenReviewRights(box: BoxResource): Promise<string | undefined> {
    const name = boxNames(box).tokenReviewBinding;
    if (usesTokenReview(box)) {
      await this.kube.apply(CLUSTER_ROLE_BINDINGS, undefined, tokenReviewBinding(box));
      return name;
    }
    if (box.status?.tokenReviewBinding && (await this.kube.delete(CLUSTER_ROLE_BINDINGS, undefined, name))) {
      this.log.info(
        { box: `${box.metadata.namespace}/${box.metadata.name}`, clusterRoleBinding: name },
        'the box no longer uses TokenReview: removed its system:auth-delegator binding',
      );
    }
    return undefined;
  }

  private async finalize(box: BoxResource, wasActive: boolean): Promise<Outcome> {
    if (!this.hasFinalizer(box, BOX_FINALIZER)) return { ready: false };
    const ns = box.metadata.namespace!;
    if (wasActive) await this.reclaim(box);
    // Cluster-scoped: no ownerReference takes it away with the Box.
    await this.kube.delete(CLUSTER_ROLE_BINDINGS, undefined, boxNames(box).tokenReviewBinding);
    await this.setFinalizer(box, BOX_FINALIZER, false);
    for (const listener of this.readyListeners) listener(ns); // records waiting on this Box can release their finalizers
    return { ready: false };
  }

  /** spec.reclaimPolicy, applied to what is this namespace's: a schema or role marked otherwise stays as it is. */
  private async reclaim(box: BoxResource): Promise<void> {
    const ns = box.metadata.namespace!;
    let adminUrl: string;
    try {
      adminUrl = await this.adminUrl(box);
    } catch (err) {
      if (!(err instanceof Problem)) throw err;
      // The Secret of spec.database is gone or holds no URL: no way into the database. A namespace being deleted takes
      // its Secrets at once and accepts no new one, so holding the Box until the Secret returns would hold the namespace
      // in Terminating for ever; what is in the database stays, as with anything reclaimPolicy Delete may not drop.
      this.log.warn(
        { namespace: ns, err: err.message },
        'box deleted; its database cannot be reached: its schema and role are left as they are',
      );
      return this.databases.forget(ns);
    }
    if (box.spec?.reclaimPolicy === 'Delete') return this.databases.drop(ns, adminUrl);
    const password = secretValue(await this.kube.find<SecretObject>(SECRETS, ns, boxNames(box).secrets.database), 'password');
    try {
      if (password) {
        await this.databases.releaseRecords(ns, adminUrl, password);
        this.log.info({ namespace: ns }, 'box deleted; its schema is retained and its records are managed through the REST API now');
      }
    } catch (err) {
      if (!(err instanceof NotOwned)) throw err;
      this.log.warn({ namespace: ns, err: err.message }, "box deleted; its schema is not marked as this namespace's: left as it is");
    } finally {
      await this.databases.forget(ns);
    }
  }
}

/** The Secrets the Box's spec names, which others write and the operator only reads: a change to one is news for the Box. */
function secretsNamedBy(box: BoxResource): string[] {
  return [box.spec?.database?.secretRef?.name, box.spec?.tls?.secretName].filter((n): n is string => n !== undefined);
}

/** The Available condition, from the Deployment's status. */
function availability(box: BoxResource, deployment: DeploymentObject): NewCondition {
  const want = box.spec?.replicas ?? 1;
  const available = deployment.status?.availableReplicas ?? 0;
  const selector = `app.kubernetes.io/instance=${box.metadata.name}`;
  const condition = { type: ConditionType.Available };
  if (want === 0) return { ...condition, status: 'False', reason: BoxReason.ScaledToZero, message: 'spec.replicas is 0' };
  if (available > 0) {
    return {
      ...condition,
      status: 'True',
      reason: BoxReason.MinimumReplicasAvailable,
      message: `${available} of ${want} API pods available`,
    };
  }
  return {
    ...condition,
    status: 'False',
    reason: BoxReason.NoPodsAvailable,
    message: `0 of ${want} API pods available; see kubectl get pods -n ${box.metadata.namespace} -l ${selector}`,
  };
}

/** The Ready=False reason and message of a failed reconcile. */
function problemOf(err: unknown): Problem {
  if (err instanceof Problem) return err;
  if (err instanceof NotOwned) return new Problem(BoxReason.DatabaseOwnedElsewhere, err.message, { cause: err });
  return new Problem(BoxReason.ProvisioningFailed, `${errorMessage(err)}; retrying`, { cause: err });
}
