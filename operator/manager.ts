// Wires informers to controllers. Event handlers only enqueue keys:
// - a Box, Client or AccessPolicy change enqueues that object;
// - a Box change also enqueues the namespace's Clients and AccessPolicies (they
//   depend on the box being ready);
// - a Secret change enqueues the Clients that read it and the Client or Box that
//   owns it (a rotated client secret, a deleted generated Secret);
// - a change of a Deployment the operator wrote enqueues its Box (availability,
//   or repair of an edit).
// Every resyncMs, every object is enqueued with force, a slice of the namespaces
// each second (ResyncSchedule), so drift in a box's database is repaired even
// though no Kubernetes event announces it; an object whose inputs are unchanged
// is only rechecked there (Controller.recheck), with no request to the API
// server, and the records of a box in one query per kind at its Box's recheck
// (RecordController.sweep).
import type { Logger } from '../api/public.js';
import { PostgresBoxDatabases, type BoxDatabases } from './boxdb.js';
import { systemClock, type Clock } from './clock.js';
import type { OperatorConfig } from './config.js';
import type { ControllerDeps } from './controller.js';
import { AccessPolicyController, type AccessPolicyResource } from './controllers/accesspolicy.js';
import { AppController, type AppResource } from './controllers/app.js';
import { BoxController, type BoxResource, type BoxSettings } from './controllers/box.js';
import { ClientController, type ClientResource } from './controllers/client.js';
import { isHosted } from './controllers/host.js';
import { HOST_NAME, REGISTRY_SECRET } from './controllers/host-manifests.js';
import { IdentityProviderController, type IdentityProviderResource } from './controllers/identityprovider.js';
import { WebhookController, type WebhookResource } from './controllers/webhook.js';
import { HookController, type HookResource } from './controllers/hook.js';
import { EventRecorder } from './events.js';
import { Informer } from './informer.js';
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
  type HttpKube,
  type KObject,
  type ResourceType,
} from './kube.js';
import type { OperatorMetrics } from './metrics.js';
import { MANAGED_LABELS } from './owned.js';
import { ResyncSchedule } from './resync.js';

/** The host's Deployment or registry Secret (in the operator's namespace, made by the operator). */
const isHostObject = (obj: KObject): boolean =>
  (obj.metadata.name === HOST_NAME || obj.metadata.name === REGISTRY_SECRET) &&
  obj.metadata.labels?.['app.kubernetes.io/component'] === 'host';
const isReady = (box: BoxResource): boolean => box.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

export class Manager {
  private readonly informers: Informer<any>[] = [];
  private readonly databases: BoxDatabases;
  readonly boxes: BoxController;
  readonly clients: ClientController;
  readonly policies: AccessPolicyController;
  readonly apps: AppController;
  readonly identityProviders: IdentityProviderController;
  readonly webhooks: WebhookController;
  readonly hooks: HookController;
  private resyncTimer: NodeJS.Timeout | undefined;
  private started = false;
  private stopping = false;
  private markStopped!: () => void;
  private readonly stopped = new Promise<void>((resolve) => {
    this.markStopped = resolve;
  });

  constructor(
    kube: HttpKube,
    private readonly config: OperatorConfig,
    settings: BoxSettings,
    log: Logger,
    metrics: OperatorMetrics,
    clock: Clock = systemClock,
  ) {
    const informer = <T extends KObject>(
      name: string,
      type: ResourceType,
      extra: { labelSelector?: string; metadataOnly?: boolean } = {},
    ): Informer<T> => {
      const i = new Informer<T>(kube, name, { type, relistMs: config.relistMs, idleMs: config.watchIdleMs, clock, ...extra }, log, metrics);
      this.informers.push(i);
      return i;
    };
    const boxes = informer<BoxResource>('boxes', BOXES);
    const clients = informer<ClientResource>('clients', CLIENTS);
    const policies = informer<AccessPolicyResource>('accesspolicies', ACCESS_POLICIES);
    const apps = informer<AppResource>('apps', APPS);
    const identityProviders = informer<IdentityProviderResource>('identityproviders', IDENTITY_PROVIDERS);
    const webhooks = informer<WebhookResource>('webhooks', WEBHOOKS);
    const hooks = informer<HookResource>('hooks', HOOKS);
    const secrets = informer<KObject>('secrets', SECRETS, { metadataOnly: true });
    const deployments = informer<KObject>('deployments', DEPLOYMENTS, {
      labelSelector: Object.entries(MANAGED_LABELS)
        .map(([k, v]) => `${k}=${v}`)
        .join(','),
    });

    const deps: ControllerDeps = { kube, log, metrics, events: new EventRecorder(kube, config.identity, log, clock), clock };
    this.databases = new PostgresBoxDatabases(log);
    this.boxes = new BoxController(boxes, secrets, deployments, deps, this.databases, settings);
    this.clients = new ClientController(clients, secrets, deps, this.boxes);
    this.policies = new AccessPolicyController(policies, deps, this.boxes);
    this.apps = new AppController(apps, deps, this.boxes);
    this.identityProviders = new IdentityProviderController(identityProviders, secrets, deps, this.boxes);
    this.webhooks = new WebhookController(webhooks, secrets, deps, this.boxes);
    this.hooks = new HookController(hooks, secrets, deps, this.boxes);

    const records = (namespace: string): void => {
      this.clients.enqueueNamespace(namespace);
      this.policies.enqueueNamespace(namespace);
      this.apps.enqueueNamespace(namespace);
      this.identityProviders.enqueueNamespace(namespace);
      this.webhooks.enqueueNamespace(namespace);
      this.hooks.enqueueNamespace(namespace);
    };
    boxes.on((_e, box) => records(box.metadata.namespace!));
    this.boxes.onReady(records);
    for (const kind of [this.clients, this.policies, this.apps, this.identityProviders, this.webhooks, this.hooks]) {
      this.boxes.onRecheck((namespace, pool) => kind.sweep(namespace, pool));
    }
    secrets.on((_e, secret) => {
      const ns = secret.metadata.namespace!;
      for (const name of this.clients.clientsUsingSecret(ns, secret.metadata.name)) this.clients.enqueue(ns, name);
      for (const owner of secret.metadata.ownerReferences ?? []) if (owner.kind === 'Client') this.clients.enqueue(ns, owner.name);
      for (const name of this.identityProviders.usingSecret(ns, secret.metadata.name)) this.identityProviders.enqueue(ns, name);
      for (const name of this.webhooks.usingSecret(ns, secret.metadata.name)) this.webhooks.enqueue(ns, name);
      for (const name of this.hooks.usingSecret(ns, secret.metadata.name)) this.hooks.enqueue(ns, name);
      for (const name of this.boxes.boxesUsing(secret)) this.boxes.enqueue(ns, name);
      if (isHostObject(secret)) this.boxes.hosts.enqueue(); // the registry changed behind the operator's back
    });
    deployments.on((_e, deployment) => {
      for (const name of this.boxes.boxesUsing(deployment)) this.boxes.enqueue(deployment.metadata.namespace!, name);
      if (isHostObject(deployment)) {
        this.boxes.hosts.enqueue(); // repaired, or made again
        // Its pods came or went: the hosted boxes waiting for it look again now.
        for (const box of boxes.list()) if (isHosted(box) && !isReady(box)) this.boxes.enqueue(box.metadata.namespace!, box.metadata.name);
      }
    });
    boxes.on((event) => {
      if (event === 'delete') this.boxes.hosts.enqueue();
    });
  }

  /** True once every informer has filled its cache. */
  get synced(): boolean {
    return this.started && this.informers.every((i) => i.hasSynced);
  }

  /** Starts the informers, waits for their caches, then the controllers and the resync timer. */
  async start(): Promise<void> {
    for (const i of this.informers) i.start();
    await Promise.race([Promise.all(this.informers.map((i) => i.synced)), this.stopped]);
    if (this.stopping) return;
    const workers = this.config.workers;
    this.boxes.start(workers);
    this.boxes.hosts.start();
    this.clients.start(workers);
    this.policies.start(workers);
    this.apps.start(workers);
    this.identityProviders.start(workers);
    this.webhooks.start(workers);
    this.hooks.start(workers);
    const schedule = new ResyncSchedule(this.config.resyncMs);
    this.resyncTimer = setInterval(() => {
      const { first, inSlice } = schedule.next();
      this.boxes.resync(inSlice);
      if (first) this.boxes.hosts.enqueue();
      this.clients.resync(inSlice);
      this.policies.resync(inSlice);
      this.apps.resync(inSlice);
      this.identityProviders.resync(inSlice);
      this.webhooks.resync(inSlice);
      this.hooks.resync(inSlice);
    }, schedule.intervalMs);
    this.started = true;
  }

  /** Stops handing out work, lets reconciles in progress finish (up to timeoutMs), stops the informers. */
  async stop(timeoutMs: number): Promise<void> {
    this.stopping = true;
    this.markStopped();
    clearInterval(this.resyncTimer);
    const drained = Promise.all([
      this.boxes.stop(),
      this.boxes.hosts.stop(),
      this.clients.stop(),
      this.policies.stop(),
      this.apps.stop(),
      this.identityProviders.stop(),
      this.webhooks.stop(),
      this.hooks.stop(),
    ]);
    await Promise.race([drained, new Promise((r) => setTimeout(r, timeoutMs).unref())]);
    for (const i of this.informers) i.stop();
    await this.databases.close();
  }
}
