// The host of hosted boxes: one work-queue key for the registry, the host's
// Deployment, Service and ServiceAccount. A Box's reconcile decides what its
// entry is (want()); the key then renders the registry from every Box's
// decision, so a thousand boxes reconciled at once coalesce into a few writes,
// and an unchanged registry writes nothing. A Box this process has not
// decided on yet (a restart: Boxes are reconciled one by one) keeps the entry
// the registry has: the host never loses a box for the operator's restart.
// The host's objects exist while some Box is hosted (on demand: a cluster
// without hosted boxes runs no host pod); the Deployment goes with the last.
import http from 'node:http';
import https from 'node:https';
import { errorMessage, parseRegistry, type RegistryEntry } from '../../api/public.js';
import type { ControllerDeps } from '../controller.js';
import { sameJson } from '../controller.js';
import type { ObjectCache } from '../informer.js';
import { DEPLOYMENTS, isConflict, SECRETS, SERVICE_ACCOUNTS, SERVICES, type KObject } from '../kube.js';
import { applyChanged } from '../owned.js';
import { WorkQueue } from '../queue.js';
import { secretValue, type SecretObject } from '../secrets.js';
import type { BoxResource } from './box/types.js';
import {
  appliesReplicas,
  HOST_NAME,
  hostDeployment,
  hostnamesOf,
  hostService,
  hostServiceAccount,
  registrySecret,
  registryText,
  REGISTRY_KEY,
  REGISTRY_SECRET,
  REPLICAS_HANDOVER_MANAGER,
  replicasHandover,
  type HostSettings,
} from './host-manifests.js';

const KEY = 'host';
/** How long the operator waits for the host's answer about a box. */
const PROBE_TIMEOUT_MS = 2000;

export const isHosted = (box: BoxResource): boolean => box.spec?.serving === 'Hosted';
const keyOf = (box: BoxResource): string => `${box.metadata.namespace}/${box.metadata.name}`;

export class HostController {
  readonly queue: WorkQueue;
  /** By Box: its entry as its last reconcile in this process decided (null: none). */
  private readonly wanted = new Map<string, RegistryEntry | null>();
  /** The entries of the registry as last read or written: whose names are taken. */
  private served = new Map<string, RegistryEntry>();

  constructor(
    private readonly boxes: ObjectCache<BoxResource>,
    private readonly deployments: ObjectCache<KObject>,
    private readonly deps: ControllerDeps,
    readonly settings: HostSettings,
  ) {
    this.queue = new WorkQueue({ clock: deps.clock });
  }

  /** The Box's entry (null: it is not to be hosted any more); the registry is rendered again if that is news. */
  want(box: BoxResource, entry: RegistryEntry | null): void {
    const key = keyOf(box);
    const before = this.wanted.get(key);
    if (before !== undefined && sameJson(before, entry)) return;
    this.wanted.set(key, entry);
    this.enqueue();
  }

  /** The Box is gone: its entry with it. */
  forget(namespace: string, name: string): void {
    this.wanted.delete(`${namespace}/${name}`);
    this.enqueue();
  }

  /** The other box whose entry holds one of these names, if any: two boxes at one name would make the host refuse the registry. */
  claimedBy(entry: RegistryEntry): string | undefined {
    const names = new Set(entry.hostnames);
    const entries = new Map(this.served);
    for (const [key, e] of this.wanted) {
      if (e) entries.set(key, e);
      else entries.delete(key);
    }
    for (const [key, e] of entries) if (key !== entry.box && e.hostnames.some((h) => names.has(h))) return key;
    return undefined;
  }

  enqueue(): void {
    this.queue.add(KEY);
  }

  start(): void {
    this.queue.run(
      1,
      () => this.reconcile(),
      (key, err, retryInMs) => this.deps.log.error({ controller: 'host', key, err, retryInMs }, 'reconcile failed; retrying'),
    );
    this.enqueue();
  }

  stop(): Promise<void> {
    return this.queue.shutdown();
  }

  /** Whether the host answers for the box: its `GET /readyz`, asked through the host's Service with the box's name as Host. */
  answers(box: BoxResource): Promise<boolean> {
    const url = new URL('/readyz', this.settings.url);
    const transport = url.protocol === 'https:' ? https : http;
    return new Promise((resolve) => {
      const req = transport.request(url, { headers: { host: hostnamesOf(box)[0] }, timeout: PROBE_TIMEOUT_MS }, (res) => {
        res.resume();
        resolve(res.statusCode === 200);
      });
      req.on('timeout', () => req.destroy(new Error('no answer')));
      req.on('error', () => resolve(false));
      req.end();
    });
  }

  /**
   * The host's replicas left to its scaler (BOXAUTH_HOST_REPLICAS=auto) while the operator's apply still holds them:
   * held at their value by a second manager first (replicasHandover). Not forced: were the cached count stale, it
   * would be because another manager (the HPA) changed it, and holds it now; that is a conflict, and nothing to do.
   */
  private async handOverReplicas(live: KObject): Promise<void> {
    const { kube, log } = this.deps;
    const ns = this.settings.namespace;
    const replicas = (live.spec as { replicas?: number } | undefined)?.replicas;
    if (replicas === undefined) return;
    try {
      await kube.apply(DEPLOYMENTS, ns, replicasHandover(this.settings, replicas), {
        fieldManager: REPLICAS_HANDOVER_MANAGER,
        force: false,
      });
      log.info({ replicas }, `the replicas of ${ns}/${HOST_NAME} are left to its scaler (BOXAUTH_HOST_REPLICAS=auto)`);
    } catch (err) {
      if (!isConflict(err)) throw err;
    }
  }

  /** One pass: the registry from every Box's decision, then the host's objects (or the Deployment's removal). */
  async reconcile(): Promise<void> {
    const { kube, log } = this.deps;
    const ns = this.settings.namespace;
    const secret = await kube.find<SecretObject>(SECRETS, ns, REGISTRY_SECRET);
    const text = secretValue(secret, REGISTRY_KEY);
    const current = new Map<string, RegistryEntry>();
    try {
      for (const e of text === undefined ? [] : parseRegistry(text)) current.set(e.box, e);
    } catch (err) {
      log.warn({ err: errorMessage(err) }, `the registry ${ns}/${REGISTRY_SECRET} does not parse; rendered from the Boxes alone`);
    }
    // The oldest Box keeps a name first: a later one that claims it is left out (and refused by its own reconcile).
    const order = (b: BoxResource): string => `${b.metadata.creationTimestamp}|${keyOf(b)}`;
    const boxes = this.boxes.list().sort((a, b) => order(a).localeCompare(order(b)));
    const entries: RegistryEntry[] = [];
    const taken = new Map<string, string>();
    for (const box of boxes) {
      if (box.metadata.deletionTimestamp) continue;
      const key = keyOf(box);
      const decided = this.wanted.get(key);
      const entry = decided === undefined ? current.get(key) : decided;
      if (!entry) continue;
      const clash = entry.hostnames.find((h) => taken.has(h));
      if (clash) {
        log.warn({ box: key, hostname: clash, holder: taken.get(clash) }, 'left out of the registry: another box has that host name');
        continue;
      }
      for (const h of entry.hostnames) taken.set(h, key);
      entries.push(entry);
    }
    this.served = new Map(entries.map((e) => [e.box, e]));
    const hosting = entries.length > 0 || boxes.some((b) => isHosted(b) && !b.metadata.deletionTimestamp);
    const rendered = registryText(entries);
    if (hosting) {
      await applyChanged(kube, SERVICE_ACCOUNTS, ns, hostServiceAccount(this.settings), await kube.find(SERVICE_ACCOUNTS, ns, HOST_NAME));
      await applyChanged(kube, SERVICES, ns, hostService(this.settings), await kube.find(SERVICES, ns, HOST_NAME));
    }
    // Before the Deployment: its pods do not start without the Secret they mount.
    if (text !== rendered && (hosting || secret)) {
      await kube.apply(SECRETS, ns, registrySecret(this.settings, rendered));
      log.info({ boxes: entries.length }, `registry ${ns}/${REGISTRY_SECRET} written`);
    }
    if (hosting) {
      const live = this.deployments.get(ns, HOST_NAME);
      if (this.settings.replicas === 'auto' && live && appliesReplicas(live)) await this.handOverReplicas(live);
      await applyChanged(kube, DEPLOYMENTS, ns, hostDeployment(this.settings), live);
    } else if (this.deployments.get(ns, HOST_NAME)) {
      await kube.delete(DEPLOYMENTS, ns, HOST_NAME);
      log.info(`no Box is hosted: the host's Deployment ${ns}/${HOST_NAME} is removed`);
    }
  }
}
