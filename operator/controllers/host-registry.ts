// The registry of the operator's shared host (api/host/registry.ts reads it): a
// Secret of the operator's namespace with one entry per hosted box. Entries are
// set as boxes reconcile and written together, a moment later, so that a
// thousand boxes reconciled at once make a few writes, not a thousand; an
// unchanged registry is not written at all. A new leader starts from the Secret
// the last one wrote, so no box drops out of the host while it catches up.
import http from 'node:http';
import type { Logger } from '../../api/public.js';
import type { ObjectCache } from '../informer.js';
import { SECRETS, type Kube } from '../kube.js';
import { MANAGED_LABELS } from '../owned.js';
import { secretValue, type SecretObject } from '../secrets.js';
import { HOST_NAME, REGISTRY_KEY, REGISTRY_SECRET, type HostSettings } from './box/hosting.js';
import type { BoxResource } from './box/types.js';

export interface RegistryEntry {
  box: string;
  hostnames: string[];
  env: Record<string, string>;
}

/** How long entries set at once wait to be written together. */
const WRITE_DELAY_MS = 200;

export class HostRegistry {
  private readonly entries = new Map<string, RegistryEntry>();
  private seeded: Promise<void> | undefined;
  private written: string | undefined;
  private pending: Promise<void> | undefined;

  constructor(
    private readonly kube: Kube,
    private readonly boxes: ObjectCache<BoxResource>,
    private readonly settings: HostSettings,
    private readonly log: Logger,
  ) {}

  /** The entries the last leader wrote: kept until their boxes say otherwise. */
  private seed(): Promise<void> {
    this.seeded ??= (async () => {
      const secret = await this.kube.find<SecretObject>(SECRETS, this.settings.namespace, REGISTRY_SECRET);
      const text = secretValue(secret, REGISTRY_KEY);
      this.written = text;
      if (!text) return;
      try {
        for (const entry of (JSON.parse(text) as { boxes: RegistryEntry[] }).boxes) this.entries.set(entry.box, entry);
      } catch {
        this.log.warn({ secret: REGISTRY_SECRET }, 'the host registry does not parse; it is written afresh');
      }
    })().catch((err: unknown) => {
      this.seeded = undefined;
      throw err;
    });
    return this.seeded;
  }

  /** Sets (or with undefined, removes) the entry of box `key` (namespace/name); resolves once the registry holds it. */
  async set(key: string, entry: RegistryEntry | undefined): Promise<void> {
    await this.seed();
    const before = JSON.stringify(this.entries.get(key));
    if (entry) this.entries.set(key, entry);
    else this.entries.delete(key);
    if (JSON.stringify(entry) === before && this.written !== undefined && !this.pending) return;
    await this.flush();
  }

  /** Whether the registry has an entry for the box. */
  has(key: string): boolean {
    return this.entries.has(key);
  }

  private flush(): Promise<void> {
    this.pending ??= new Promise<void>((resolve) => setTimeout(resolve, WRITE_DELAY_MS))
      .then(() => {
        this.pending = undefined;
        return this.write();
      })
      .catch((err: unknown) => {
        this.pending = undefined;
        throw err;
      });
    return this.pending;
  }

  /** Writes the registry unless it says what is written: entries of Boxes that exist, sorted. */
  private async write(): Promise<void> {
    for (const key of this.entries.keys()) {
      const [namespace, name] = key.split('/') as [string, string];
      if (!this.boxes.get(namespace, name)) this.entries.delete(key); // deleted while no leader watched
    }
    const boxes = [...this.entries.values()].sort((a, b) => a.box.localeCompare(b.box));
    const text = JSON.stringify({ boxes });
    if (text === this.written) return;
    const body = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: REGISTRY_SECRET, namespace: this.settings.namespace, labels: { ...MANAGED_LABELS } },
      type: 'Opaque',
      data: { [REGISTRY_KEY]: Buffer.from(text).toString('base64') },
    };
    await this.kube.apply(SECRETS, this.settings.namespace, body);
    this.written = text;
    this.log.info({ boxes: boxes.length }, 'host registry written');
  }

  /**
   * Whether the host answers for the box: its /readyz through the host's Service, with one of the
   * box's names as Host. Only the operator's own pod can ask (the Service is cluster-internal): out of
   * a cluster, or before the host runs, it does not, and a box being moved stays on its Deployment.
   */
  serves(hostname: string): Promise<boolean> {
    return new Promise((resolve) => {
      const req = http.get(
        { host: `${HOST_NAME}.${this.settings.namespace}.svc`, port: 80, path: '/readyz', headers: { Host: hostname }, timeout: 2000 },
        (res) => {
          res.resume();
          resolve(res.statusCode === 200);
        },
      );
      req.on('timeout', () => req.destroy());
      req.on('error', () => resolve(false));
    });
  }
}
