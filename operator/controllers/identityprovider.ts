// IdentityProvider resources → identity provider records: where people of the box may sign in
// with an account they already have (crds/identityprovider.yaml). Validation is the REST API's.
//
// The client secret (oidc, oauth2, github) or bind password (ldap) comes from spec.secretRef in
// the resource's namespace. The box sends it on, so it cannot be hashed as a Client's secret is:
// it is sealed under the box's factor key (the Secret <box>-factor-key the operator made), as the
// REST API seals the `secret` it is given. Sealing is random, so a pass that finds the stored
// value opens to the same secret keeps it: a resync writes nothing and bumps no version. The
// Secret informer enqueues the IdentityProvider when its Secret appears or changes.
import {
  type IdentityProvider,
  identityProviders,
  type IdentityProviderSpec,
  providerSecret,
  sealProviderSecret,
  type Stored,
} from '../../api/public.js';
import { Problem, type ControllerDeps, type Resource } from '../controller.js';
import type { ObjectCache } from '../informer.js';
import { IDENTITY_PROVIDERS, SECRETS, type KObject } from '../kube.js';
import { IdentityProviderReason } from '../reasons.js';
import { missingKeyMessage, secretValue, type SecretObject } from '../secrets.js';
import { boxNames, FACTOR_KEY_FILE } from './box-manifests.js';
import type { BoxController, BoxResource } from './box.js';
import { RecordController, type Desired } from './records.js';

export type IdentityProviderResource = Resource<IdentityProviderSpec>;

/** The Secret and key the provider's secret is read from, or undefined when it has none. */
export function providerSecretSource(obj: IdentityProviderResource): { name: string; key: string } | undefined {
  const ref = obj.spec?.secretRef;
  if (!ref) return undefined;
  return { name: ref.name, key: ref.key ?? (obj.spec?.type === 'ldap' ? 'bind-password' : 'client-secret') };
}

export class IdentityProviderController extends RecordController<IdentityProviderSpec, 'IdentityProvider'> {
  constructor(
    informer: ObjectCache<IdentityProviderResource>,
    private readonly secrets: ObjectCache<KObject>,
    deps: ControllerDeps,
    boxes: BoxController,
  ) {
    super('identityprovider', IDENTITY_PROVIDERS, informer, deps, boxes, identityProviders);
  }

  /** IdentityProviders to reconcile when a Secret of the namespace changes: those referring to it. */
  usingSecret(namespace: string, secretName: string): string[] {
    return this.informer
      .list(namespace)
      .filter((p) => providerSecretSource(p)?.name === secretName)
      .map((p) => p.metadata.name);
  }

  protected override fingerprint(obj: IdentityProviderResource): string {
    const source = providerSecretSource(obj);
    const secret = source && this.secrets.get(obj.metadata.namespace, source.name);
    return `${super.fingerprint(obj)}|${source?.name}|${secret?.metadata.uid}|${secret?.metadata.resourceVersion}`;
  }

  protected async desired(
    obj: IdentityProviderResource,
    box: BoxResource,
    stored: Stored<IdentityProvider> | undefined,
  ): Promise<Desired<IdentityProvider>> {
    const record = this.baseRecord(obj, ['secretRef']);
    const source = providerSecretSource(obj);
    if (!source) return { record, secretSealed: null };
    const secret = await this.secretOf(obj, source);
    const key = await this.factorKey(box);
    const sealed = stored?.managedBy === this.managedBy(obj) ? (stored.secretSealed ?? null) : null;
    if (sealed && this.opens(key, record.id, sealed) === secret) return { record, secretSealed: undefined };
    return { record, secretSealed: sealProviderSecret(key, record.id, secret) };
  }

  private async secretOf(obj: IdentityProviderResource, source: { name: string; key: string }): Promise<string> {
    const ns = obj.metadata.namespace!;
    const secret = await this.kube.find<SecretObject>(SECRETS, ns, source.name);
    if (!secret)
      throw new Problem(IdentityProviderReason.SecretNotFound, `Secret ${ns}/${source.name} (spec.secretRef) does not exist; create it`);
    const value = secretValue(secret, source.key);
    if (value === undefined)
      throw new Problem(
        IdentityProviderReason.SecretKeyNotFound,
        `${missingKeyMessage(secret, source.key)}; set spec.secretRef.key or add the key`,
      );
    if (!value) throw new Problem(IdentityProviderReason.SecretKeyNotFound, `Secret ${ns}/${source.name} key "${source.key}" is empty`);
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
      return providerSecret(key, id, sealed);
    } catch {
      return undefined;
    }
  }
}
