// The IdentityProvider controller: IdentityProvider resources become the box's identity provider
// records, validated as the REST API validates them, with the secret of spec.secretRef sealed
// under the box's factor key (what the sign-in pages open it with) and never in the record.
import { expect } from 'chai';
import { providerSecret } from '../../../../api/people/upstream/secret.js';
import { identityProviders } from '../../../../api/store/identity-providers.js';
import { boxNames, FACTOR_KEY_FILE } from '../../../../operator/controllers/box-manifests.js';
import type { IdentityProviderResource } from '../../../../operator/controllers/identityprovider.js';
import { IDENTITY_PROVIDERS, SECRETS } from '../../../../operator/kube.js';
import { secretValue, type SecretObject } from '../../../../operator/secrets.js';
import { OperatorHarness, ready, recordsDatabase } from '../../../support/operator.js';

const NS = 'team-a';
const provider = (name: string, spec: IdentityProviderResource['spec'] | Record<string, unknown>): IdentityProviderResource => ({
  metadata: { name, namespace: NS },
  spec: spec as IdentityProviderResource['spec'],
});
const corp = (secretRef?: { name: string; key?: string }): IdentityProviderResource =>
  provider('corp', {
    type: 'oidc',
    displayName: 'Corp SSO',
    oidc: { issuer: 'https://sso.corp.example', clientId: 'boxauth' },
    ...(secretRef ? { secretRef } : {}),
  });
const directory = provider('directory', {
  type: 'ldap',
  ldap: { url: 'ldaps://ldap.corp.example', bindDN: 'cn=boxauth,dc=corp', userSearch: { baseDN: 'dc=corp', usernameAttribute: 'uid' } },
  secretRef: { name: 'ldap-bind' },
});

describe('IdentityProvider controller', function () {
  const db = recordsDatabase();
  let h: OperatorHarness;
  let factorKey: Buffer;
  beforeEach(async function () {
    h = new OperatorHarness(db.pool);
    const box = await h.readyBox(NS);
    const secret = h.kube.object<SecretObject>(SECRETS, NS, boxNames(box).secrets.factorKey);
    factorKey = Buffer.from(secretValue(secret, FACTOR_KEY_FILE)!, 'base64');
  });

  async function reconciled(obj: IdentityProviderResource): Promise<IdentityProviderResource> {
    h.kube.put(IDENTITY_PROVIDERS, obj);
    await h.reconcile(h.identityProviders, NS, obj.metadata.name);
    return h.object<IdentityProviderResource>(IDENTITY_PROVIDERS, NS, obj.metadata.name)!;
  }
  const storedSecret = async (id: string): Promise<string | undefined> =>
    providerSecret(factorKey, id, (await identityProviders.read(db.pool, id))!.secretSealed ?? null);

  it("writes the record, managed by the resource, its secret sealed under the box's factor key and not in the record", async function () {
    await h.kube.create(SECRETS, NS, { metadata: { name: 'corp-sso' }, stringData: { 'client-secret': 'the-corp-client-secret' } });
    const obj = await reconciled(corp({ name: 'corp-sso' }));
    expect(ready(obj)).to.deep.include({ status: 'True', reason: 'Reconciled' });
    const stored = (await identityProviders.read(db.pool, 'corp'))!;
    expect(stored.managedBy).to.equal('IdentityProvider team-a/corp');
    expect(stored.resource).to.deep.include({ resourceType: 'IdentityProvider', id: 'corp', type: 'oidc', displayName: 'Corp SSO' });
    expect(stored.resource).to.not.have.property('secretRef');
    expect(JSON.stringify(stored.resource)).to.not.include('the-corp-client-secret');
    expect(await storedSecret('corp')).to.equal('the-corp-client-secret');
  });

  it('waits for a missing Secret (SecretNotFound), and takes it once it is there', async function () {
    const obj = await reconciled(corp({ name: 'corp-sso' }));
    expect(ready(obj)).to.deep.include({
      status: 'False',
      reason: 'SecretNotFound',
      message: 'Secret team-a/corp-sso (spec.secretRef) does not exist; create it',
    });
    expect(h.kube.eventsAbout(NS, 'corp')).to.deep.equal(['Warning SecretNotFound']);
    expect(await identityProviders.read(db.pool, 'corp')).to.equal(undefined);
    await h.kube.create(SECRETS, NS, { metadata: { name: 'corp-sso' }, stringData: { 'client-secret': 'the-corp-client-secret' } });
    expect(h.identityProviders.usingSecret(NS, 'corp-sso')).to.deep.equal(['corp']); // what the Secret informer enqueues
    await h.reconcile(h.identityProviders, NS, 'corp');
    expect(ready(h.object(IDENTITY_PROVIDERS, NS, 'corp'))).to.deep.include({ status: 'True', reason: 'Reconciled' });
    expect(await storedSecret('corp')).to.equal('the-corp-client-secret');
  });

  it("reads an ldap provider's bind password under bind-password; a Secret without the key is SecretKeyNotFound", async function () {
    await h.kube.create(SECRETS, NS, { metadata: { name: 'ldap-bind' }, stringData: { 'client-secret': 'not-this-one' } });
    const obj = await reconciled(directory);
    expect(ready(obj)).to.deep.include({
      status: 'False',
      reason: 'SecretKeyNotFound',
      message: 'Secret team-a/ldap-bind has no key "bind-password" (it has: client-secret); set spec.secretRef.key or add the key',
    });
    expect(JSON.stringify(obj.status)).to.not.include('not-this-one');
    await h.kube.patch(SECRETS, NS, 'ldap-bind', { stringData: { 'bind-password': 'the-bind-password' } });
    await h.reconcile(h.identityProviders, NS, 'directory');
    expect(ready(h.object(IDENTITY_PROVIDERS, NS, 'directory'))).to.deep.include({ status: 'True', reason: 'Reconciled' });
    expect(await storedSecret('directory')).to.equal('the-bind-password');
  });

  it('keeps the sealed secret through a resync, and seals a changed one when the Secret changes', async function () {
    await h.kube.create(SECRETS, NS, { metadata: { name: 'corp-sso' }, stringData: { 'client-secret': 'the-first-secret' } });
    await reconciled(corp({ name: 'corp-sso' }));
    const version = (await identityProviders.read(db.pool, 'corp'))!.resource.meta!.versionId;
    await h.identityProviders.reconcileKey(`${NS}/corp`, true); // the periodic resync
    expect((await identityProviders.read(db.pool, 'corp'))!.resource.meta!.versionId).to.equal(version);
    await h.kube.patch(SECRETS, NS, 'corp-sso', { stringData: { 'client-secret': 'the-rotated-secret' } });
    await h.reconcile(h.identityProviders, NS, 'corp');
    expect(await storedSecret('corp')).to.equal('the-rotated-secret');
    expect(h.kube.eventsAbout(NS, 'corp')).to.not.include('Normal DriftRepaired');
  });

  it('refuses a spec the REST API would refuse (InvalidSpec), and writes nothing', async function () {
    const odd = await reconciled(provider('odd', { type: 'github', oidc: { issuer: 'https://sso.corp.example', clientId: 'x' } }));
    expect(ready(odd)).to.deep.include({ status: 'False', reason: 'InvalidSpec' });
    expect(await identityProviders.read(db.pool, 'odd')).to.equal(undefined);
  });

  it('on deletion removes its record', async function () {
    await reconciled(corp());
    expect(await storedSecret('corp')).to.equal(undefined);
    await h.kube.delete(IDENTITY_PROVIDERS, NS, 'corp');
    await h.reconcile(h.identityProviders, NS, 'corp');
    expect(await identityProviders.read(db.pool, 'corp')).to.equal(undefined);
  });
});
