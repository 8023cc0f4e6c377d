// Client resources → client records. The secret comes from spec.secretRef, or
// from a Secret the operator generates once and owns (<client>-client-secret,
// keys client-id and client-secret); the Secret informer enqueues the Client
// when that Secret changes, so a rotated value reaches the box within moments.
// Secrets are stored as argon2id hashes; to avoid hashing on every resync, the
// API's SecretVerifier remembers which secret matched which stored hash.
//
// A Client may bind (auth.workload) only ServiceAccounts of namespaces its Box
// allows (its own, and spec.workloadNamespaces): otherwise whoever may write
// Clients in one namespace could act as another tenant's workloads. A Client
// refused for that has no record in the box; when the Box stops allowing a
// namespace, the record written before is removed and its tokens stop working.
import { createHash } from 'node:crypto';
import {
  ApiError,
  checkClaimsCompile,
  samlMetadataProblem,
  samlMetadataStatus,
  type SamlMetadataStatus,
  type Client,
  clients,
  type ClientSpec,
  generateSecret,
  hashSecret,
  hasOwnCredential,
  isSecretMethod,
  type Pool,
  processGate,
  SecretVerifier,
  type Stored,
  workloadSettings,
} from '../../api/public.js';
import { Problem, type ControllerDeps, type Resource } from '../controller.js';
import type { ObjectCache } from '../informer.js';
import { CLIENTS, SECRETS, type KObject } from '../kube.js';
import { ensureOwned, MANAGED_LABELS, ownerReference } from '../owned.js';
import { ClientReason, ConditionType } from '../reasons.js';
import { missingKeyMessage, secretValue, type SecretObject } from '../secrets.js';
import { allowsWorkloadNamespace } from './box-manifests.js';
import type { BoxController, BoxResource } from './box.js';
import { RecordController, RecordRefused, type Desired } from './records.js';

export type { ClientSpec };
export type ClientResource = Resource<ClientSpec>;

export const GENERATED_SECRET_KEY = 'client-secret';
const MIN_SECRET = 8;

/** The name of the Secret the operator generates for a Client (a valid object name at any client name length). */
export function generatedSecretName(client: string): string {
  const name = `${client}-client-secret`;
  if (name.length <= 253) return name;
  return `${client.slice(0, 235)}-${createHash('sha256').update(client).digest('hex').slice(0, 8)}-secret`;
}

/** The Secret a Client reads its secret from, or undefined for a public client. */
export function secretSource(client: ClientResource): { name: string; key: string; generated: boolean } | undefined {
  const spec = client.spec!;
  // A public client (token_endpoint_auth_method none) has none, whatever else it says (its CRD refuses secretRef and generateSecret: true).
  if (spec.token_endpoint_auth_method === 'none') return undefined;
  if (spec.secretRef) return { name: spec.secretRef.name, key: spec.secretRef.key ?? GENERATED_SECRET_KEY, generated: false };
  // A client bound to ServiceAccounts (auth.workload) or SPIFFE IDs (auth.spiffe) authenticates with their tokens, one with keys (jwks,
  // jwks_uri) with its own assertions, a SAML app that uses no grant none at all: no secret unless asked for. One that declares client_secret_basic or client_secret_post
  // authenticates with its secret only: it gets one, as a client that declares nothing and holds nothing else does.
  const withoutSecret =
    !isSecretMethod(spec.token_endpoint_auth_method) &&
    (spec.auth?.workload !== undefined || spec.auth?.spiffe !== undefined || hasOwnCredential(spec) || spec.grant_types.length === 0);
  if (!(spec.generateSecret ?? !withoutSecret)) return undefined;
  return { name: generatedSecretName(client.metadata.name), key: GENERATED_SECRET_KEY, generated: true };
}

/** The client secret held in `secret` under `key`; a Problem when missing or too short. */
function clientSecretIn(secret: SecretObject, key: string, fix: string): string {
  const where = `Secret ${secret.metadata.namespace}/${secret.metadata.name}`;
  const value = secretValue(secret, key);
  if (value === undefined) throw new Problem(ClientReason.SecretKeyNotFound, `${missingKeyMessage(secret, key)}; ${fix}`);
  if (value.length < MIN_SECRET)
    throw new Problem(ClientReason.SecretTooShort, `the client secret in ${where} key "${key}" must be at least ${MIN_SECRET} characters`);
  return value;
}

/** A RecordRefused when auth.workload binds a ServiceAccount of a namespace the Box does not allow. */
function checkWorkloadNamespaces(record: Client, box: BoxResource): void {
  const refused = (workloadSettings(record)?.serviceAccounts ?? []).filter((sa) => !allowsWorkloadNamespace(box, sa.namespace));
  if (!refused.length) return;
  const ns = box.metadata.namespace!;
  const namespaces = [...new Set(refused.map((sa) => sa.namespace))];
  const allowed = [ns, ...(box.spec?.workloadNamespaces ?? [])];
  throw new RecordRefused(
    ClientReason.ServiceAccountNamespaceNotAllowed,
    `auth.workload binds ${refused.map((sa) => `ServiceAccount ${sa.namespace}/${sa.name}`).join(', ')}, but Box ${box.metadata.name} lets ` +
      `its Clients bind ServiceAccounts of namespace${allowed.length > 1 ? 's' : ''} ${allowed.join(', ')} only: a cluster admin may add ` +
      `${namespaces.map((n) => `"${n}"`).join(', ')} to the Box's spec.workloadNamespaces, or bind ServiceAccounts of namespace ${ns}; ` +
      'until then this client has no record in the box',
  );
}

/** How soon a Client whose SAML metadata the box has not fetched yet is looked at again (the box fetches within seconds). */
export const SAML_METADATA_PENDING_REQUEUE_MS = 5000;

/**
 * The SamlMetadataReady condition of a SAML app whose metadata is at `url`, from what the box
 * recorded of it (api/saml/app-status.ts): Unknown (and a look again soon) until the box has
 * fetched that URL. Its message says nothing that changes when the box fetches the same document
 * again, so that a resync writes no status.
 */
export function samlMetadataCondition(
  url: string,
  status: SamlMetadataStatus | undefined,
): Pick<Desired<Client>, 'conditions' | 'requeueAfterMs'> {
  const type = ConditionType.SamlMetadataReady;
  if (!status || status.url !== url) {
    const message = `the box has not fetched the SAML metadata at ${url} yet`;
    return {
      conditions: [{ type, status: 'Unknown', reason: ClientReason.SamlMetadataPending, message }],
      requeueAfterMs: SAML_METADATA_PENDING_REQUEUE_MS,
    };
  }
  if (status.outcome === 'refused')
    return { conditions: [{ type, status: 'False', reason: ClientReason[status.reason], message: status.message }] };
  const sp = status.summary;
  const slo = [...new Set(sp.logout.map((l) => bindingName(l.binding)))];
  const message =
    `the box read the SAML metadata at ${url}: entity ID ${sp.entityId}, ${sp.consumers.length} AssertionConsumerService` +
    `${sp.consumers.length === 1 ? '' : 's'}, SingleLogoutService ${slo.length ? slo.join(' and ') : 'none'}, ` +
    (sp.certificatesExpire ? `its first certificate expires ${sp.certificatesExpire}` : 'no certificate');
  return { conditions: [{ type, status: 'True', reason: ClientReason.SamlMetadataRead, message }] };
}

/** A binding's short name: urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect is HTTP-Redirect. */
const bindingName = (binding: string): string => binding.slice(binding.lastIndexOf(':') + 1);

/** The version of a Secret as the API server gives it (uid and resourceVersion): a new value makes a new one. */
const versionOf = (secret: KObject | undefined): string | undefined =>
  secret && `${secret.metadata.uid}/${secret.metadata.resourceVersion}`;

export class ClientController extends RecordController<ClientSpec, 'Client'> {
  /** Sized for every Client of the cluster: a resync walks them all, and one evicted is an argon2 run at each pass. */
  private readonly verifier = new SecretVerifier(processGate, Number.MAX_SAFE_INTEGER);
  /** By Client: the hash this process made or checked, and the version of the Secret it was from (no secret kept). */
  private readonly hashedFrom = new Map<string, { hash: string; version: string | undefined }>();

  constructor(
    informer: ObjectCache<ClientResource>,
    private readonly secrets: ObjectCache<KObject>,
    deps: ControllerDeps,
    boxes: BoxController,
  ) {
    super('client', CLIENTS, informer, deps, boxes, clients);
  }

  /** Clients to reconcile when a Secret changes: those referring to it, and the one owning it. */
  clientsUsingSecret(namespace: string, secretName: string): string[] {
    return this.informer
      .list(namespace)
      .filter((c) => secretSource(c)?.name === secretName)
      .map((c) => c.metadata.name);
  }

  protected override fingerprint(obj: ClientResource): string {
    const source = secretSource(obj);
    const secret = source && this.secrets.get(obj.metadata.namespace, source.name);
    const allowed = this.boxes.activeBox(obj.metadata.namespace!)?.spec?.workloadNamespaces;
    return `${super.fingerprint(obj)}|${source?.name}|${secret?.metadata.uid}|${secret?.metadata.resourceVersion}|${allowed?.join(',')}`;
  }

  /**
   * A SAML app's metadata at a URL is looked at by itself at each resync: what the box fetched there since
   * (SamlMetadataReady) is in no stamp of its row.
   */
  protected override sweptByBox(obj: ClientResource): boolean {
    return obj.spec?.saml?.metadata.url === undefined && super.sweptByBox(obj);
  }

  protected async desired(obj: ClientResource, box: BoxResource, stored: Stored<Client> | undefined): Promise<Desired<Client>> {
    const record = this.baseRecord(obj, ['secretRef', 'generateSecret']);
    checkWorkloadNamespaces(record, box);
    try {
      checkClaimsCompile(record);
    } catch (err) {
      // A claim that cannot be (api/policy/claims.ts) is the author's to fix: nothing is written.
      if (err instanceof ApiError) throw new Problem(ClientReason.InvalidClaims, err.message, { cause: err });
      throw err;
    }
    // A SAML app's metadata that does not read as an SP's (api/saml/service-providers.ts) is the author's to fix: nothing is written.
    const samlProblem = await samlMetadataProblem(record);
    if (samlProblem) throw new Problem(ClientReason.InvalidSamlMetadata, samlProblem);
    const url = record.saml?.metadata.url;
    const pool = this.boxes.pool(box);
    const saml =
      url === undefined || !pool
        ? { without: [ConditionType.SamlMetadataReady] }
        : samlMetadataCondition(url, await samlMetadataStatus(pool, record.id));
    return { ...(await this.withCredentials(obj, record, stored)), ...saml };
  }

  /** The record with the secret it authenticates with, if any (a Problem when the source is missing or wrong). */
  private async withCredentials(obj: ClientResource, record: Client, stored: Stored<Client> | undefined): Promise<Desired<Client>> {
    const source = secretSource(obj);
    if (!source) {
      if (isSecretMethod(record.token_endpoint_auth_method)) {
        throw new Problem(
          ClientReason.SecretRequired,
          `a ${record.token_endpoint_auth_method} client authenticates with its secret: set spec.secretRef, or remove generateSecret: false`,
        );
      }
      if (record.grant_types.includes('client_credentials') && !record.auth?.workload && !hasOwnCredential(record)) {
        throw new Problem(
          ClientReason.SecretRequired,
          'a client_credentials client needs a secret source: set spec.secretRef, remove generateSecret: false, bind ServiceAccounts in auth.workload, or register its keys (jwks or jwks_uri)',
        );
      }
      return { record, secretHash: null, status: {} }; // a public client: drop a secret it may have had
    }
    const key = `${obj.metadata.namespace}/${obj.metadata.name}`;
    const mine = stored?.managedBy === this.managedBy(obj) && stored.secretHash !== null;
    const cached = this.secrets.get(obj.metadata.namespace, source.name);
    const known = this.hashedFrom.get(key);
    // The stored hash is the one this process made or checked from this very version of the Secret: no GET, no argon2.
    if (mine && known && known.hash === stored.secretHash && known.version === versionOf(cached)) {
      return { record, secretHash: undefined, status: { secretName: source.name } };
    }
    const object = source.generated ? await this.generatedSecret(obj, source.name) : await this.referencedSecret(obj, source.name);
    const secret = clientSecretIn(
      object,
      source.key,
      source.generated ? 'delete the Secret to have a new one generated' : 'set spec.secretRef.key or add the key',
    );
    const same = mine && (await this.verifier.verify(key, stored.secretHash!, secret));
    if (same) {
      this.hashedFrom.set(key, { hash: stored.secretHash!, version: versionOf(object) });
      return { record, secretHash: undefined, status: { secretName: source.name } };
    }
    const secretHash = await hashSecret(secret);
    this.verifier.remember(key, secretHash, secret); // the next pass (e.g. the Secret's own event) needs no argon2
    this.hashedFrom.set(key, { hash: secretHash, version: versionOf(object) });
    return { record, secretHash, status: { secretName: source.name } };
  }

  private async referencedSecret(obj: ClientResource, name: string): Promise<SecretObject> {
    const ns = obj.metadata.namespace!;
    const secret = await this.kube.find<SecretObject>(SECRETS, ns, name);
    if (!secret) throw new Problem(ClientReason.SecretNotFound, `Secret ${ns}/${name} (spec.secretRef) does not exist; create it`);
    return secret;
  }

  /** The generated secret: created once, owned by the Client (garbage-collected with it). */
  private generatedSecret(obj: ClientResource, name: string): Promise<SecretObject> {
    const ns = obj.metadata.namespace!;
    return ensureOwned<SecretObject>(
      this.kube,
      SECRETS,
      obj,
      name,
      () => ({
        metadata: {
          name,
          namespace: ns,
          labels: { ...MANAGED_LABELS, 'boxauth.io/client': obj.metadata.name },
          ownerReferences: [ownerReference(obj)],
        },
        type: 'Opaque',
        stringData: { 'client-id': obj.metadata.name, [GENERATED_SECRET_KEY]: generateSecret() },
      }),
      {
        foreign: () =>
          new Problem(
            ClientReason.SecretConflict,
            `Secret ${ns}/${name} exists and is not the operator's; set spec.secretRef to use it, or delete it`,
          ),
      },
    );
  }

  protected override async deleteRecord(pool: Pool, id: string, managedBy: string): Promise<void> {
    await clients.removeWithSessions(pool, id, managedBy);
  }
}
