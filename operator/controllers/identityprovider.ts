// IdentityProvider resources → identity provider records: where people of the box may sign in
// with an account they already have (crds/identityprovider.yaml). Validation is the REST API's.
//
// The client secret (oidc, oauth2, github) or bind password (ldap) comes from spec.secretRef in
// the resource's namespace, sealed under the box's factor key (controllers/sealed-secret.ts).
import {
  type IdentityProvider,
  identityProviders,
  type IdentityProviderSpec,
  providerSecret,
  sealProviderSecret,
  type Stored,
} from '../../api/public.js';
import type { ControllerDeps, Resource } from '../controller.js';
import type { ObjectCache } from '../informer.js';
import { IDENTITY_PROVIDERS, type KObject } from '../kube.js';
import type { BoxController, BoxResource } from './box.js';
import type { Desired } from './records.js';
import { SealedSecretController } from './sealed-secret.js';

export type IdentityProviderResource = Resource<IdentityProviderSpec>;

/** The Secret and key the provider's secret is read from, or undefined when it has none. */
export function providerSecretSource(obj: IdentityProviderResource): { name: string; key: string } | undefined {
  const ref = obj.spec?.secretRef;
  if (!ref) return undefined;
  return { name: ref.name, key: ref.key ?? (obj.spec?.type === 'ldap' ? 'bind-password' : 'client-secret') };
}

export class IdentityProviderController extends SealedSecretController<IdentityProviderSpec, 'IdentityProvider'> {
  constructor(informer: ObjectCache<IdentityProviderResource>, secrets: ObjectCache<KObject>, deps: ControllerDeps, boxes: BoxController) {
    super('identityprovider', IDENTITY_PROVIDERS, informer, secrets, deps, boxes, identityProviders, {
      seal: sealProviderSecret,
      open: (key, id, sealed) => providerSecret(key, id, sealed),
    });
  }

  secretSource(obj: IdentityProviderResource): { name: string; key: string } | undefined {
    return providerSecretSource(obj);
  }

  protected async desired(
    obj: IdentityProviderResource,
    box: BoxResource,
    stored: Stored<IdentityProvider> | undefined,
  ): Promise<Desired<IdentityProvider>> {
    const record = this.baseRecord(obj, ['secretRef']);
    return { record, secretSealed: await this.sealedSecret(obj, box, stored, record.id) };
  }
}
