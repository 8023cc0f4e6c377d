// Box resources → a box: its PostgreSQL database or schema and role, its Secrets (database
// URL, signing key, root client, admin password), its API Deployment and
// Service, all owned by the Box. One Box per namespace: the oldest one wins, a
// second is refused.
//
// This file is the reconcile as a short list of steps; each concern is a file
// of box/ (as CloudNativePG splits its cluster controller): database.ts (and
// cnpg.ts, for a CloudNativePG Cluster), signing-key.ts and secrets.ts (the Secrets), tls.ts (spec.tls), smtp.ts (spec.smtp), identity.ts
// (ServiceAccount and TokenReview rights), status.ts (conditions, decided
// without I/O), reclaim.ts (spec.reclaimPolicy on deletion). The Kubernetes
// objects go with the Box through their ownerReferences; its ServiceAccount's place in the chart's
// cluster-scoped ClusterRoleBinding for TokenReview is taken out by the finalizer.
import { randomBytes } from 'node:crypto';
import { generatePassword, generateSecret, PASSWORD_MIN_LENGTH, type Pool, type RegistryEntry } from '../../api/public.js';
import { NotOwned, PlaceChanged, type BoxAccess, type BoxDatabases } from '../boxdb.js';
import { Controller, Problem, type ControllerDeps, type Outcome } from '../controller.js';
import type { ObjectCache } from '../informer.js';
import { applyChanged } from '../owned.js';
import { BOXES, DEPLOYMENTS, SECRETS, SERVICES, type KObject } from '../kube.js';
import { BoxReason, ConditionType } from '../reasons.js';
import type { SecretObject } from '../secrets.js';
import { apiDeployment, apiService, baseUrlOf, boxNames, FACTOR_KEY_FILE, grpcAuthzAddress, ROOT_CLIENT_ID } from './box-manifests.js';
import { ensureBoxDatabase } from './box/database.js';
import { HostController, isHosted } from './host.js';
import { hostAddress, hostId, notHostable, registryEntry } from './host-manifests.js';
import { dropTokenReviewRights, ensureServiceAccount, ensureTokenReviewRights } from './box/identity.js';
import { reclaim } from './box/reclaim.js';
import { ensureBoxSecret, secretsNamedBy } from './box/secrets.js';
import { ensureSigningKeySecret } from './box/signing-key.js';
import { availability, databaseStatus, declaredDatabase, placeInWords, problemOf, unreached, type DatabaseStatus } from './box/status.js';
import { smtpProblem } from './box/smtp.js';
import { tlsProblem } from './box/tls.js';
import { BOX_FINALIZER, type BoxResource, type BoxSettings, type BoxWork, type DeploymentObject, type ServiceObject } from './box/types.js';

export { BOX_FINALIZER, type BoxResource, type BoxSettings, type BoxSpec } from './box/types.js';

/** What a reconcile has learnt of the box's database so far: status.database, should a later step fail. */
interface Seen {
  database: DatabaseStatus;
}

export class BoxController extends Controller<BoxResource> {
  private readonly readyListeners: ((namespace: string) => void)[] = [];
  private readonly sweepers: ((namespace: string, pool: Pool) => Promise<void>)[] = [];
  /** By Box: how its database was reached at its last provisioning in this process (what recheck() looks at). */
  private readonly reached = new Map<string, { uid: string | undefined; access: BoxAccess }>();
  /** By hosted Box: how many looks found the host not answering for it yet (each waits longer). */
  private readonly waitingForHost = new Map<string, number>();
  /** The host of hosted boxes: their registry and the host's objects. */
  readonly hosts: HostController;

  constructor(
    informer: ObjectCache<BoxResource>,
    private readonly secrets: ObjectCache<KObject>,
    private readonly deployments: ObjectCache<DeploymentObject>,
    deps: ControllerDeps,
    private readonly databases: BoxDatabases,
    private readonly settings: BoxSettings,
  ) {
    super('box', BOXES, informer, deps);
    this.hosts = new HostController(informer, deployments, deps, settings.host);
  }

  /** Called after each successful reconcile of a box: its Clients and AccessPolicies can be (re)written. */
  onReady(listener: (namespace: string) => void): void {
    this.readyListeners.push(listener);
  }

  /** Called at each resync of a box this process provisioned, with its pool: its records are looked at there (RecordController.sweep). */
  onRecheck(sweeper: (namespace: string, pool: Pool) => Promise<void>): void {
    this.sweepers.push(sweeper);
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

  /** Boxes to reconcile when a Secret or Deployment changes: the owner, and Boxes whose spec.database, spec.tls or spec.smtp refers to it. */
  boxesUsing(obj: KObject): string[] {
    const ns = obj.metadata.namespace!;
    const names = new Set<string>();
    for (const o of obj.metadata.ownerReferences ?? []) if (o.kind === 'Box' && o.apiVersion.startsWith('boxauth.io/')) names.add(o.name);
    for (const b of this.informer.list(ns)) if (secretsNamedBy(b).includes(obj.metadata.name)) names.add(b.metadata.name);
    return [...names];
  }

  private get work(): BoxWork {
    return { kube: this.kube, log: this.log, events: this.deps.events, databases: this.databases, settings: this.settings };
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

  protected override async forgetObject(namespace: string, name: string): Promise<void> {
    this.reached.delete(`${namespace}/${name}`);
    this.waitingForHost.delete(`${namespace}/${name}`);
    this.hosts.forget(namespace, name);
    if (!this.activeBox(namespace)) await this.databases.forget(namespace);
  }

  /**
   * A resync of a Box with nothing in Kubernetes changed since this process provisioned it: its Secrets,
   * Deployment and Service are watched, so only its database, which no event tells of, is looked at (one
   * query as the box's role; provisioned again when its schema or role was dropped or changed), and its
   * records with it (one query per kind, on the same connection).
   */
  protected override async recheck(box: BoxResource): Promise<Outcome> {
    const ns = box.metadata.namespace!;
    const reached = this.reached.get(`${ns}/${box.metadata.name}`);
    if (!reached || reached.uid !== box.metadata.uid) return this.reconcile(box);
    try {
      await this.databases.ensure(ns, reached.access);
    } catch (err) {
      // Moved to a database of its own (docs/guides/upgrading.md): located again, its pods' Secret rewritten.
      if (err instanceof PlaceChanged) return this.reconcile(box);
      throw err;
    }
    const pool = this.databases.pool(ns);
    if (pool) for (const sweep of this.sweepers) await sweep(ns, pool);
    return { ready: true };
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
    const image = box.spec?.image;
    if (this.settings.pinImage && image !== undefined && image !== this.settings.image) {
      // Checked before anything is made: a Box writer must not choose the code that runs with the box's secrets.
      const problem = new Problem(
        BoxReason.ImageNotAllowed,
        `spec.image is ${image}, but this operator runs boxes on ${this.settings.image} only (BOXAUTH_OPERATOR_PIN_BOX_IMAGE): remove spec.image`,
      );
      await this.markNotReady(box, problem);
      return { ready: false };
    }
    const unhostable = isHosted(box) ? notHostable(box, this.settings.host) : undefined;
    if (unhostable) {
      // Checked before anything is made or moved: a dedicated box keeps serving as it was, a hosted one stays hosted.
      await this.markNotReady(box, new Problem(BoxReason.NotHostable, unhostable));
      return { ready: false };
    }
    await this.setFinalizer(box, BOX_FINALIZER, true);
    const seen: Seen = { database: unreached(declaredDatabase(box)) };
    try {
      return await this.provision(box, seen);
    } catch (err) {
      await this.markNotReady(box, problemOf(err), { fields: this.failedFields(box, seen) }).catch(() => undefined);
      // Names held by someone else do not come back by themselves: the periodic resync looks again, without a backoff loop.
      if (err instanceof NotOwned) return { ready: false };
      throw err; // retried with backoff: a database or API server may come back by itself
    }
  }

  /** The status fields of a Box that is not ready: those in place stay, status.database says what was seen. */
  private failedFields(box: BoxResource, seen: Seen): Record<string, unknown> {
    return { ...this.statusFields(box), database: seen.database };
  }

  /** The steps, in order: database, Secrets, identity, TLS, Service and Deployment; then the status. */
  private async provision(box: BoxResource, seen: Seen): Promise<Outcome> {
    const { kube, settings, databases } = this.work;
    const ns = box.metadata.namespace!;
    const names = boxNames(box);
    const database = await ensureBoxDatabase(kube, box, settings, databases);
    seen.database = unreached(database.description);
    let db;
    try {
      db = await databases.ensure(ns, database.access);
    } catch (err) {
      seen.database = databaseStatus(database.description, err);
      throw err;
    }
    seen.database = databaseStatus(database.description);
    this.reached.set(`${ns}/${box.metadata.name}`, { uid: box.metadata.uid, access: database.access });
    const secrets = [
      // With a Cluster, what the pods take from its application Secret is copied into this one: a new password
      // rewrites it (and rolls them), a change the pods do not read (a label) does not.
      database.secret,
      await ensureSigningKeySecret(kube, this.deps.events, box),
      // Seals the TOTP secrets in the database: made once and never replaced by the operator (a new key would
      // make every enrolled TOTP unreadable, and the box refuses to start with another key than it sealed with).
      await ensureBoxSecret(kube, box, names.secrets.factorKey, () => ({ [FACTOR_KEY_FILE]: randomBytes(32).toString('base64') })),
      await ensureBoxSecret(kube, box, names.secrets.rootClient, () => ({
        'client-id': ROOT_CLIENT_ID,
        'client-secret': generateSecret(),
      })),
      await ensureBoxSecret(kube, box, names.secrets.admin, () => ({
        email: box.spec?.admin?.email ?? 'admin@localhost',
        password: generatePassword(box.spec?.passwordMinLength ?? PASSWORD_MIN_LENGTH.default),
      })),
    ];
    // The pods read these through their environment, once, at start: a new version must roll them. Not so the TLS
    // Secret: it is mounted, the kubelet updates its files in place and the box re-reads them (api/http/tls.ts), so a
    // renewed certificate reaches the running pods; rolling them at every renewal would only drop connections.
    // The SMTP password is read through the environment too: a new one rolls them.
    const smtpRef = box.spec?.smtp?.passwordSecretRef;
    const smtpSecret = smtpRef ? await kube.find<SecretObject>(SECRETS, ns, smtpRef.name) : undefined;
    const secretVersions = [...secrets, ...(smtpSecret ? [smtpSecret] : [])].map((x) => x.metadata.resourceVersion ?? '');
    const serviceAccount = await ensureServiceAccount(kube, box);
    const binding = await ensureTokenReviewRights(kube, this.log, box, settings.tokenReviewBinding);
    const tlsSecret = box.spec?.tls ? await kube.find<SecretObject>(SECRETS, ns, box.spec.tls.secretName) : undefined;
    const notReady = tlsProblem(box, tlsSecret) ?? smtpProblem(box, smtpSecret);
    if (notReady) {
      // No backoff loop: the Secret informer brings the Box back when that Secret appears or changes (boxesUsing).
      await this.markNotReady(box, notReady, { fields: this.failedFields(box, seen) });
      return { ready: false };
    }
    const pooled = database.description.directHost !== undefined;
    const service = await kube.find<ServiceObject>(SERVICES, ns, names.service);
    // A hosted box's entry: its variables with these Secrets' values (the same list its Deployment would read).
    const byName = new Map([...secrets, ...(smtpSecret ? [smtpSecret] : [])].map((x) => [x.metadata.name, x]));
    const entry = (): RegistryEntry => registryEntry(box, pooled, byName);
    const url = baseUrlOf(box);
    const where = placeInWords(database.access, db.schema);
    const fields = {
      url,
      schema: db.schema,
      database: seen.database,
      service: names.service,
      secrets: names.secrets,
      serviceAccount,
      ...(binding ? { tokenReviewBinding: binding } : {}),
    };
    if (isHosted(box)) return this.host(box, entry(), service, fields, where);
    const deployment = await applyChanged<DeploymentObject>(
      kube,
      DEPLOYMENTS,
      ns,
      apiDeployment(box, { image: settings.image, imagePullPolicy: settings.imagePullPolicy, secretVersions, pooled }),
      this.deployments.get(ns, names.deployment),
    );
    // Back from the host: the host serves the box until one of its pods can (the Deployment's status brings it back).
    if (service?.spec?.type === 'ExternalName' && (box.spec?.replicas ?? 1) > 0 && !deployment.status?.availableReplicas) {
      this.hosts.want(box, entry());
      const message = `Deployment ${names.deployment} is starting; the host ${hostId(settings.host)} serves the box until one of its pods is available`;
      await this.markNotReady(box, new Problem(BoxReason.MovingToDedicated, message, { event: false }), { fields });
      return { ready: false };
    }
    await applyChanged(kube, SERVICES, ns, apiService(box), service);
    this.hosts.want(box, null);
    await this.markReady(box, {
      reason: BoxReason.Provisioned,
      message: `${where}, Secrets, Deployment ${names.deployment} and Service ${names.service} are in place; the box serves at ${url}`,
      fields: {
        ...fields,
        grpcAuthz: grpcAuthzAddress(box),
        deployment: names.deployment,
        availableReplicas: deployment.status?.availableReplicas ?? 0,
      },
      conditions: [availability(box, deployment)],
    });
    for (const listener of this.readyListeners) listener(ns);
    return { ready: true };
  }

  /**
   * A hosted box: its entry in the registry; once the host answers for it, its Service pointed at the host and its
   * Deployment (of a box that was dedicated) removed. Until then a dedicated box's Service and pods serve it.
   */
  private async host(
    box: BoxResource,
    entry: RegistryEntry,
    service: ServiceObject | undefined,
    fields: Record<string, unknown>,
    where: string,
  ): Promise<Outcome> {
    const { kube, settings } = this.work;
    const ns = box.metadata.namespace!;
    const names = boxNames(box);
    const key = `${ns}/${box.metadata.name}`;
    const holder = this.hosts.claimedBy(entry);
    if (holder) {
      const problem = new Problem(
        BoxReason.NotHostable,
        `the host name ${entry.hostnames.at(-1)} (spec.baseUrl) is hosted Box ${holder}'s`,
      );
      await this.markNotReady(box, problem, { fields });
      return { ready: false };
    }
    this.hosts.want(box, entry);
    const deployment = this.deployments.get(ns, names.deployment);
    if (!(await this.hosts.answers(box))) {
      // Nothing else serves a box without a Deployment: its Service may point at the host at once.
      if (!deployment) await applyChanged(kube, SERVICES, ns, apiService(box, hostAddress(settings.host)), service);
      const waited = (this.waitingForHost.get(key) ?? 0) + 1;
      this.waitingForHost.set(key, waited);
      const message = `the host ${hostId(settings.host)} does not answer for the box yet (GET /readyz, Host: ${entry.hostnames[0]})${deployment ? `; Deployment ${names.deployment} serves it meanwhile` : ''}`;
      await this.markNotReady(box, new Problem(BoxReason.HostNotAnswering, message, { event: false }), { fields });
      // Within seconds, less often the longer it takes (a host that is down must not have every box asking it at once).
      return { ready: false, requeueAfterMs: Math.min(1000 * 2 ** Math.min(waited - 1, 5), 30_000) };
    }
    this.waitingForHost.delete(key);
    await applyChanged(kube, SERVICES, ns, apiService(box, hostAddress(settings.host)), service);
    if (deployment) await kube.delete(DEPLOYMENTS, ns, names.deployment);
    await this.markReady(box, {
      reason: BoxReason.Hosted,
      message: `${where} and Secrets are in place, Service ${names.service} points at the host ${hostId(settings.host)}, which serves the box at ${String(fields.url)}`,
      fields: { ...fields, host: hostId(settings.host) },
      conditions: [
        {
          type: ConditionType.Available,
          status: 'True',
          reason: BoxReason.HostAnswering,
          message: `the host ${hostId(settings.host)} answers for the box`,
        },
      ],
    });
    for (const listener of this.readyListeners) listener(ns);
    return { ready: true };
  }

  private async finalize(box: BoxResource, wasActive: boolean): Promise<Outcome> {
    if (!this.hasFinalizer(box, BOX_FINALIZER)) return { ready: false };
    const ns = box.metadata.namespace!;
    // Out of the registry before its schema may go: the host stops serving it.
    this.hosts.forget(ns, box.metadata.name);
    if (wasActive) await reclaim(this.work, box);
    // Cluster-scoped: no ownerReference takes the ServiceAccount out of it with the Box. A duplicate Box, never
    // active, was never put in: the namespace's place is its active Box's.
    if (wasActive) await dropTokenReviewRights(this.kube, box, this.settings.tokenReviewBinding);
    await this.setFinalizer(box, BOX_FINALIZER, false);
    for (const listener of this.readyListeners) listener(ns); // records waiting on this Box can release their finalizers
    return { ready: false };
  }
}
