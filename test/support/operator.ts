// The operator's controllers as the manager wires them (operator/manager.ts),
// on a FakeKube and a ManualClock instead of an API server and the system
// clock, and with box databases faked (FakeBoxDatabases) unless a test hands
// it a real one for the records. A test calls reconcile() where a queue worker
// would, and reads what a user would see: status, Events, Secrets, records.
import { migrate } from '../../api/db/migrate.js';
import { createPool, type Pool } from '../../api/db/pool.js';
import { createLogger } from '../../api/log.js';
import {
  boxDbNames,
  boxDbNamesFor,
  databaseOf,
  ownDatabaseNames,
  type BoxAccess,
  type BoxDatabases,
  type BoxDbNames,
  type BoxIsolation,
  type BoxPlace,
} from '../../operator/boxdb.js';
import type { Condition } from '../../operator/conditions.js';
import type { Controller, ControllerDeps, Resource } from '../../operator/controller.js';
import { AccessPolicyController, type AccessPolicyResource } from '../../operator/controllers/accesspolicy.js';
import { AppController, type AppResource } from '../../operator/controllers/app.js';
import { BoxController, type BoxResource, type BoxSettings } from '../../operator/controllers/box.js';
import { ClientController, type ClientResource } from '../../operator/controllers/client.js';
import { IdentityProviderController, type IdentityProviderResource } from '../../operator/controllers/identityprovider.js';
import { WebhookController, type WebhookResource } from '../../operator/controllers/webhook.js';
import { HookController, type HookResource } from '../../operator/controllers/hook.js';
import { EventRecorder } from '../../operator/events.js';
import {
  ACCESS_POLICIES,
  APPS,
  BOXES,
  CLIENTS,
  DEPLOYMENTS,
  IDENTITY_PROVIDERS,
  WEBHOOKS,
  HOOKS,
  SECRETS,
  type KObject,
  type ResourceType,
} from '../../operator/kube.js';
import { OperatorMetrics } from '../../operator/metrics.js';
import { ManualClock, settle } from './clock.js';
import { FakeKube } from './fake-kube.js';
import { createDatabase } from './postgres.js';

export const SETTINGS: BoxSettings = {
  adminUrl: 'postgres://operator:operator-password@db.example:5432/boxauth',
  boxDatabaseHost: undefined,
  boxDatabasePoolerHost: undefined,
  boxIsolation: 'Database',
  image: 'boxauth:test',
  imagePullPolicy: 'Never',
  pinImage: false,
  tokenReviewBinding: 'boxauth-operator-token-review',
  host: {
    namespace: 'boxauth-system',
    image: 'boxauth:test',
    imagePullPolicy: 'Never',
    replicas: 2,
    resources: {},
    url: 'http://127.0.0.1:9',
  },
};

/**
 * Box databases without PostgreSQL: each call is written down, and a box is
 * "connected" once ensure() succeeded; its pool is `records` (a real database
 * when the test needs records, else none).
 */
export class FakeBoxDatabases implements BoxDatabases {
  /** "<call> <namespace>" for every call, in order. */
  readonly calls: string[] = [];
  /** The password each namespace's last ensure() was given for the box's own role. */
  readonly passwords = new Map<string, string>();
  /** How each namespace's last ensure() was to get in. */
  readonly accesses = new Map<string, BoxAccess>();
  /** Thrown by ensure() while set: a database that fails, or a schema that is someone else's (NotOwned). */
  failure: Error | undefined;
  /** Namespaces whose boxes live in a schema of the shared database already, whatever the setting asks. */
  readonly inSharedSchema = new Set<string>();
  private readonly connected = new Set<string>();

  constructor(private readonly records?: Pool) {}

  /** The key the fake's own databases are named with. */
  static readonly NAME_KEY = Buffer.alloc(32, 7);

  async place(namespace: string, adminUrl: string, isolation: BoxIsolation): Promise<BoxPlace> {
    const shared = boxDbNames(namespace, databaseOf(adminUrl));
    const sharedSchema = shared.schema;
    if (isolation === 'Schema' || this.inSharedSchema.has(namespace))
      return { isolation: 'Schema', names: shared, asked: isolation, sharedSchema };
    return { isolation: 'Database', names: ownDatabaseNames(namespace, FakeBoxDatabases.NAME_KEY), asked: isolation, sharedSchema };
  }

  pool(namespace: string): Pool | undefined {
    return this.connected.has(namespace) ? this.records : undefined;
  }

  async ensure(namespace: string, access: BoxAccess): Promise<BoxDbNames> {
    this.calls.push(`ensure ${namespace}`);
    if (this.failure) {
      this.connected.delete(namespace);
      throw this.failure;
    }
    this.accesses.set(namespace, access);
    if (access.kind === 'role') this.passwords.set(namespace, access.password);
    this.connected.add(namespace);
    return boxDbNamesFor(namespace, access);
  }

  async releaseRecords(namespace: string): Promise<void> {
    this.calls.push(`releaseRecords ${namespace}`);
  }

  async drop(namespace: string, access: BoxAccess): Promise<void> {
    this.calls.push(`drop ${namespace}`);
    this.accesses.set(namespace, access);
    this.connected.delete(namespace);
  }

  async forget(namespace: string): Promise<void> {
    this.calls.push(`forget ${namespace}`);
    this.connected.delete(namespace);
  }

  async close(): Promise<void> {}
}

export class OperatorHarness {
  readonly clock = new ManualClock();
  readonly metrics = new OperatorMetrics();
  readonly kube = new FakeKube(this.clock);
  readonly databases: FakeBoxDatabases;
  readonly boxes: BoxController;
  readonly clients: ClientController;
  readonly policies: AccessPolicyController;
  readonly apps: AppController;
  readonly identityProviders: IdentityProviderController;
  readonly webhooks: WebhookController;
  readonly hooks: HookController;

  /** `records`: the pool every box's records go to (unit tests that write no records need none). */
  constructor(records?: Pool, settings: BoxSettings = SETTINGS) {
    const log = createLogger('silent');
    const { kube, clock } = this;
    const deps: ControllerDeps = { kube, log, metrics: this.metrics, events: new EventRecorder(kube, 'test', log, clock), clock };
    const secrets = kube.cache<KObject>(SECRETS);
    this.databases = new FakeBoxDatabases(records);
    this.boxes = new BoxController(kube.cache<BoxResource>(BOXES), secrets, kube.cache(DEPLOYMENTS), deps, this.databases, settings);
    this.clients = new ClientController(this.kube.cache<ClientResource>(CLIENTS), secrets, deps, this.boxes);
    this.policies = new AccessPolicyController(this.kube.cache<AccessPolicyResource>(ACCESS_POLICIES), deps, this.boxes);
    this.apps = new AppController(this.kube.cache<AppResource>(APPS), deps, this.boxes);
    this.identityProviders = new IdentityProviderController(
      this.kube.cache<IdentityProviderResource>(IDENTITY_PROVIDERS),
      secrets,
      deps,
      this.boxes,
    );
    this.webhooks = new WebhookController(this.kube.cache<WebhookResource>(WEBHOOKS), secrets, deps, this.boxes);
    this.hooks = new HookController(this.kube.cache<HookResource>(HOOKS), secrets, deps, this.boxes);
    for (const kind of [this.clients, this.policies, this.apps, this.identityProviders, this.webhooks, this.hooks]) {
      this.boxes.onRecheck((namespace, pool) => kind.sweep(namespace, pool));
    }
  }

  /** One pass of the controller over the object, as a queue worker runs it; then the Events it recorded land. */
  async reconcile(controller: Controller<any>, namespace: string, name: string): Promise<{ requeueAfterMs?: number } | void> {
    try {
      return await controller.reconcileKey(`${namespace}/${name}`);
    } finally {
      await settle();
    }
  }

  /** A reconcile that must fail (to be retried with backoff): its error. */
  async failedReconcile(controller: Controller<any>, namespace: string, name: string): Promise<Error> {
    try {
      await this.reconcile(controller, namespace, name);
    } catch (err) {
      return err as Error;
    }
    throw new Error(`the reconcile of ${namespace}/${name} succeeded; a failure was expected`);
  }

  /** A Box of `spec` in the namespace, reconciled to Ready (its database faked). */
  async readyBox(namespace: string, spec: BoxResource['spec'] = {}, name = 'auth'): Promise<BoxResource> {
    this.kube.put(BOXES, { metadata: { name, namespace }, spec });
    await this.reconcile(this.boxes, namespace, name);
    const box = this.kube.object<BoxResource>(BOXES, namespace, name)!;
    if (ready(box)?.status !== 'True') throw new Error(`Box ${namespace}/${name} did not become ready: ${JSON.stringify(box.status)}`);
    return box;
  }

  /** The object as it now is. */
  object<T extends Resource>(type: ResourceType, namespace: string, name: string): T | undefined {
    return this.kube.object<T>(type, namespace, name);
  }
}

/**
 * A box database for the records of the suite it is called in (a real one:
 * records are SQL), migrated once and emptied before each test.
 */
export function recordsDatabase(): { readonly pool: Pool } {
  const db = {} as { pool: Pool };
  before(async () => {
    db.pool = createPool(await createDatabase('records'), 3);
    await migrate(db.pool);
  });
  beforeEach(() => db.pool.query('TRUNCATE clients, access_policies, identity_providers, webhooks, hooks CASCADE'));
  after(() => db.pool.end());
  return db;
}

/** The Ready condition of an object. */
export function ready(obj: Resource | undefined): Condition | undefined {
  return obj?.status?.conditions?.find((c) => c.type === 'Ready');
}
