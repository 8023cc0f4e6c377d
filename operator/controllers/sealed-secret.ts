// The resources whose secret the box sends on or signs with, so that it cannot be hashed as a
// Client's is (an IdentityProvider's client secret or bind password, a Webhook's signing secret):
// read from spec.secretRef in the resource's namespace and sealed under the box's factor key (the
// Secret <box>-factor-key the operator made), as the REST API seals the `secret` it is given.
// Sealing is random, so a pass that finds the stored value opens to the same secret keeps it: a
// resync writes nothing and bumps no version. The Secret informer enqueues the resource when its
// Secret appears or changes (usingSecret).
import type { Resources, Stored } from '../../api/public.js';
import { Problem, type ControllerDeps, type Resource } from '../controller.js';
import type { ObjectCache } from '../informer.js';
import { SECRETS, type KObject, type ResourceType } from '../kube.js';
import { missingKeyMessage, secretValue, type SecretObject } from '../secrets.js';
import { boxNames, FACTOR_KEY_FILE } from './box-manifests.js';
import type { BoxController, BoxResource } from './box.js';
import { RecordController } from './records.js';
import type { ResourceTable } from '../../api/public.js';

/** How a kind seals and opens its secret, bound to the record's id. */
export interface Sealer {
  seal(key: Buffer, id: string, secret: string): Buffer;
  open(key: Buffer, id: string, sealed: Buffer): string | undefined;
}

export abstract class SealedSecretController<S, K extends 'IdentityProvider' | 'Webhook' | 'Hook'> extends RecordController<S, K> {
  constructor(
    name: string,
    type: ResourceType,
    informer: ObjectCache<Resource<S>>,
    private readonly secrets: ObjectCache<KObject>,
    deps: ControllerDeps,
    boxes: BoxController,
    table: ResourceTable<Resources[K]>,
    private readonly sealer: Sealer,
  ) {
    super(name, type, informer, deps, boxes, table);
  }

  /** The Secret and key the secret is read from, or undefined when the resource names none. */
  abstract secretSource(obj: Resource<S>): { name: string; key: string } | undefined;

  /** Resources to reconcile when a Secret of the namespace changes: those referring to it. */
  usingSecret(namespace: string, secretName: string): string[] {
    return this.informer
      .list(namespace)
      .filter((r) => this.secretSource(r)?.name === secretName)
      .map((r) => r.metadata.name);
  }

  protected override fingerprint(obj: Resource<S>): string {
    const source = this.secretSource(obj);
    const secret = source && this.secrets.get(obj.metadata.namespace, source.name);
    return `${super.fingerprint(obj)}|${source?.name}|${secret?.metadata.uid}|${secret?.metadata.resourceVersion}`;
  }

  /**
   * The sealed secret to write: null when the resource names none, undefined when the stored one
   * opens to the Secret's value (nothing to write), else the value sealed anew. `check` says what
   * is wrong with a value (a Problem's message), without repeating it.
   */
  protected async sealedSecret(
    obj: Resource<S>,
    box: BoxResource,
    stored: Stored<Resources[K]> | undefined,
    id: string,
    check: (secret: string) => Problem | undefined = () => undefined,
  ): Promise<Buffer | null | undefined> {
    const source = this.secretSource(obj);
    if (!source) return null;
    const secret = await this.secretOf(obj, source);
    const problem = check(secret);
    if (problem) throw problem;
    const key = await this.factorKey(box);
    const sealed = stored?.managedBy === this.managedBy(obj) ? (stored.secretSealed ?? null) : null;
    if (sealed && this.opens(key, id, sealed) === secret) return undefined;
    return this.sealer.seal(key, id, secret);
  }

  private async secretOf(obj: Resource<S>, source: { name: string; key: string }): Promise<string> {
    const ns = obj.metadata.namespace!;
    const secret = await this.kube.find<SecretObject>(SECRETS, ns, source.name);
    if (!secret) throw new Problem('SecretNotFound', `Secret ${ns}/${source.name} (spec.secretRef) does not exist; create it`);
    const value = secretValue(secret, source.key);
    if (value === undefined)
      throw new Problem('SecretKeyNotFound', `${missingKeyMessage(secret, source.key)}; set spec.secretRef.key or add the key`);
    if (!value) throw new Problem('SecretKeyNotFound', `Secret ${ns}/${source.name} key "${source.key}" is empty`);
    return value;
  }

  /** The box's factor key, from the Secret the Box's reconcile made (a ready Box has it). */
  private async factorKey(box: BoxResource): Promise<Buffer> {
    const ns = box.metadata.namespace!;
    const name = boxNames(box).secrets.factorKey;
    const value = secretValue(await this.kube.find<SecretObject>(SECRETS, ns, name), FACTOR_KEY_FILE);
    const key = value === undefined ? undefined : Buffer.from(value, 'base64');
    if (key?.length !== 32) throw new Error(`Secret ${ns}/${name} holds no factor key (32 bytes in base64, key ${FACTOR_KEY_FILE})`);
    return key;
  }

  /** The stored secret, or undefined when it was sealed under another key or for another id. */
  private opens(key: Buffer, id: string, sealed: Buffer): string | undefined {
    try {
      return this.sealer.open(key, id, sealed);
    } catch {
      return undefined;
    }
  }
}
