// The resource API of Client, AccessPolicy, App, IdentityProvider, Webhook and Hook: search, read, create, replace,
// delete. JSON or YAML both ways; bodies validated against the CRD schemas.
import { randomUUID } from 'node:crypto';
import { type Request, type RequestHandler, Router } from '../router.js';
import type { Transaction, Pool } from '../../db/pool.js';
import { ApiError, ValidationError, notFound, type FieldErrors } from '../../errors.js';
import { removeClient } from '../../credentials/closing.js';
import { resourceError } from '../../credentials/errors.js';
import type { Argon2, Argon2Gate, SecretVerifier } from '../../credentials/secrets.js';
import { boxAudienceClash, type AppDirectory } from '../../decision/apps.js';
import { checkPolicyCompiles } from '../../policy/engines.js';
import { checkClaimsCompile } from '../../policy/claims.js';
import { samlMetadataProblem } from '../../saml/service-providers.js';
import { backchannelLogoutUriProblem } from '../../oauth/backchannel-logout.js';
import { writeRefusal, type RecordWrite } from '../../policy/writers.js';
import { validateResource, type ResourceBodies } from '../../schema/resources.js';
import type { ResourceKind } from '../../record-kinds.js';
import { ADMIN_CLIENT_ID, isReserved, reservedRecords } from '../../reserved.js';
import type { Config } from '../../config.js';
import type { Policies } from '../../policy/evaluate.js';
import type { RecordCache } from '../../cache/record-cache.js';
import type { ReadFence } from '../../cache/read-fence.js';
import type { SessionRow } from '../../store/sessions.js';
import type { Audit, AuditEvent } from '../../audit.js';
import { recordChanges } from '../../record-changes.js';
import { accessPolicies } from '../../store/policies.js';
import { apps } from '../../store/apps.js';
import { clients } from '../../store/clients.js';
import { ConstraintViolation } from '../../store/constraints.js';
import { withRecordWrites, type ResourceTable, type Stored } from '../../store/resources.js';
import { parseSearch } from '../../store/search.js';
import { identityProviders } from '../../store/identity-providers.js';
import { providerSecret, sealProviderSecret } from '../../people/upstream/secret.js';
import { webhooks } from '../../store/webhooks.js';
import { administeredUrlProblem } from '../../notices/post.js';
import { hasOwnCredential, isSecretMethod } from '../../client-keys.js';
import { hookSecret, sealHookSecret, sealWebhookSecret, secretProblem, webhookSecret } from '../../webhooks/signing.js';
import type { AccessPolicy, App, Bundle, Client, Hook, IdentityProvider, Resources, Webhook } from '../../types.js';
import { hooks } from '../../store/hooks.js';
import { conditionProblems } from '../../hooks/conditions.js';
import { caBundleProblem } from '../../hooks/ca-bundle.js';
import type { HookCaller } from '../../hooks/caller.js';
import { actorOf, refusedRequest, writerOf } from '../auth.js';
import { resourceBody } from '../body.js';
import { send } from '../respond.js';
import { forThisRequest } from '../request-work.js';

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
interface Needs {
  config: Config;
  pool: Pool;
  argon2: Argon2Gate;
  policies: Policies;
  clients: RecordCache<Stored<Client>>;
  apps: AppDirectory;
  policyRecords: RecordCache<Stored<AccessPolicy>>;
  readFence: ReadFence;
  sessions: RecordCache<SessionRow>;
  audit: Audit;
  factorKey: Buffer;
  secrets: SecretVerifier;
  /** The box's Hooks kept in memory: a write through this process forgets them at once. */
  hooks: Pick<HookCaller, 'forget'>;
}

type Resource = Client | AccessPolicy | App | IdentityProvider | Webhook | Hook;

export function bundle<T>(total: number, resources: T[]): Bundle<T> {
  return { resourceType: 'Bundle', type: 'searchset', total, entry: resources.map((resource) => ({ resource })) };
}

/** The body as a resource of `kind` with the id from the URL, validated; or a 422. */
function incoming<K extends ResourceKind>(kind: K, body: unknown, id: string | undefined): ResourceBodies[K] {
  if (body === undefined || body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new ValidationError(body ?? null, { resource: [`a ${kind} object is required`] });
  }
  const resource = { ...(body as Record<string, unknown>) };
  resource.resourceType ??= kind;
  if (id !== undefined) {
    if (resource.id !== undefined && resource.id !== id) throw ValidationError.field(body, 'id', `must equal the id in the URL ("${id}")`);
    resource.id = id;
  }
  delete resource.meta; // server-owned
  validateResource(kind, resource);
  return resource;
}

const reservedConflict = (kind: ResourceKind, id: string, why: string): ApiError =>
  new ApiError(409, 'conflict', `${kind} "${id}" is one of the box's own records (created at start-up): ${why}`);

/**
 * The box's own records (api/reserved.ts) stay what the box relies on: none is
 * deleted; the admin UI's client and the reserved policies are not changed here;
 * the root client keeps its grant. `next` is the record to write, or undefined to delete.
 */
function checkReserved(svc: Pick<Needs, 'config'>, kind: ResourceKind, id: string, next: Resource | undefined): void {
  if (!isReserved(reservedRecords(svc.config.rootClientId), kind, id)) return;
  if (next === undefined) throw reservedConflict(kind, id, 'it cannot be deleted');
  if (kind === 'AccessPolicy') {
    throw reservedConflict(kind, id, 'it cannot be changed; grant narrower rights with AccessPolicies of your own');
  }
  if (id === ADMIN_CLIENT_ID) throw reservedConflict(kind, id, 'the admin UI signs in with it; it follows BOXAUTH_BASE_URL at every start');
  if (!(next as Client).grant_types.includes('client_credentials')) {
    throw ValidationError.field(next, 'grant_types', 'must keep client_credentials: the root client is how administrators get in');
  }
}

/** A record written: whether it is new, and whether its secret is another than before (the record's own changes are its diff). */
type Written = { resource: Resource; created: boolean; secretChanged: boolean };

/** What writing a record uses. */
// argon2: the request's (forThisRequest): a secret still waiting to be hashed when its client goes is not.
type WriterServices = Pick<Needs, 'config' | 'pool' | 'policies' | 'sessions' | 'audit' | 'factorKey' | 'secrets'> & { argon2: Argon2 };

/**
 * Runs `work` in a transaction under the record-write lock, once the writer check
 * (api/policy/writers.ts) found that writing `next` (undefined: deleting) over the
 * record stored now grants no more than the writer holds: 403 if it would. Under the
 * lock, no write through the API changes what the check read before this one commits.
 */
type Locked = <T>(next: Resource | undefined, work: (tx: Transaction, stored: Stored<Resource> | undefined) => Promise<T>) => Promise<T>;

function lockedWrite(svc: WriterServices, req: Request, kind: ResourceKind, id: string): Locked {
  return async (next, work) => {
    // Who writes is known before the lock: the lock is held for what the check reads of the records.
    const writer = await writerOf(svc, req.principal!);
    return withRecordWrites(svc.pool, async (tx) => {
      const stored = await TABLES[kind].read(tx, id);
      const why = await writeRefusal(writer, tx, { kind, id, stored: stored?.resource, next } as RecordWrite);
      if (why) {
        svc.audit.record(refusedRequest(req, req.principal!, why));
        throw resourceError('access_denied', why);
      }
      const result = await work(tx, stored);
      const changed = recordChangedBy(req, kind, stored, result);
      if (changed) await svc.audit.recordIn(tx, changed);
      return result;
    });
  };
}

/**
 * The audit event of a write under the lock (in its transaction: api/audit.ts recordIn), from the
 * record before and what the write gave back — a Written, or for a deletion the record removed
 * (undefined: there was none). A write that changed nothing is no event.
 */
function recordChangedBy(req: Request, kind: ResourceKind, before: Stored<Resource> | undefined, result: unknown): AuditEvent | undefined {
  if (result === undefined) return undefined;
  const written = typeof result === 'object' && result !== null && 'created' in result ? (result as Written) : undefined;
  const after = written?.resource;
  const changes = recordChanges(
    before?.resource as Record<string, unknown> | undefined,
    after as Record<string, unknown> | undefined,
    written?.secretChanged ? ['secret'] : [],
  );
  const action = !written ? 'deleted' : written.created ? 'created' : 'changed';
  if (action === 'changed' && !Object.keys(changes).length) return undefined;
  return { event: 'record_changed', kind, id: before?.resource.id ?? after!.id, action, by: actorOf(req.principal!), changes };
}

async function writeClient(svc: WriterServices, body: ResourceBodies['Client'], mustBeNew: boolean, locked: Locked): Promise<Written> {
  const { secret, ...client } = body;
  checkReserved(svc, 'Client', client.id, client);
  checkClaimsCompile(client);
  const samlProblem = await samlMetadataProblem(client);
  if (samlProblem) throw ValidationError.field(body, 'saml', samlProblem);
  const logoutUriProblem = backchannelLogoutUriProblem(client, svc.config.baseUrl);
  if (logoutUriProblem) throw ValidationError.field(body, 'backchannel_logout_uri', logoutUriProblem);
  // An agent's client is the box's to write (api/oauth/agents.ts, registration.ts): a registration
  // written here would make any client pass for one, and one rewritten would be undone at its next fetch.
  if (client.registration !== undefined)
    throw ValidationError.field(
      body,
      'registration',
      'is written by the box only (a Client ID Metadata Document fetched, or a dynamic registration)',
    );
  // FAPI 2.0 §5.3.2.1: a fapi2 client authenticates with private_key_jwt or mutual TLS (api/oauth/fapi2.ts).
  if (client.profile === 'fapi2' && secret !== undefined)
    throw ValidationError.field(body, 'secret', 'a fapi2 client has no secret: it authenticates with private_key_jwt or mutual TLS only');
  // RFC 6749 §2.1: a public client has no credentials; the write drops a secret it had (below).
  const isPublic = client.token_endpoint_auth_method === 'none';
  if (isPublic && secret !== undefined)
    throw ValidationError.field(
      body,
      'secret',
      'a public client (token_endpoint_auth_method none) has no secret: leave secret out, or choose client_secret_basic or client_secret_post',
    );
  // A write racing this one changed the secret after it was checked: check again, and hash it this time.
  for (let attempt = 0; ; attempt++) {
    const secretHash = await clientSecretHash(svc, client.id, secret, attempt === 0);
    try {
      return await locked(client, async (tx, existing) => {
        if (mustBeNew && existing)
          throw new ApiError(409, 'conflict', `Client "${client.id}" already exists; PUT /Client/${client.id} replaces it`);
        if ('kept' in secretHash && existing?.secretHash !== secretHash.kept) throw new SecretMoved();
        if (isSecretMethod(client.token_endpoint_auth_method) && secret === undefined && !existing?.secretHash)
          throw ValidationError.field(
            body,
            'secret',
            `is required for a client whose token_endpoint_auth_method is ${client.token_endpoint_auth_method}: it authenticates with its secret`,
          );
        // A client bound to ServiceAccounts authenticates with their tokens, one with keys with its assertions: neither needs a secret.
        if (
          client.grant_types.includes('client_credentials') &&
          secret === undefined &&
          !existing?.secretHash &&
          !client.auth?.workload &&
          !client.auth?.spiffe &&
          !hasOwnCredential(client)
        ) {
          throw ValidationError.field(
            body,
            'secret',
            'is required for a client_credentials client (or bind ServiceAccounts with auth.workload or SPIFFE IDs with auth.spiffe, register its keys: jwks or jwks_uri, or its certificate: token_endpoint_auth_method)',
          );
        }
        const { stored, created } = await clients.write(tx, client, {
          managedBy: null,
          secretHash: isPublic ? null : secretHash.hash,
        });
        const secretDropped = isPublic && Boolean(existing?.secretHash);
        return { resource: stored.resource as Resource, created, secretChanged: secretHash.hash !== undefined || secretDropped };
      });
    } catch (err) {
      if (!(err instanceof SecretMoved)) throw err;
    }
  }
}

/** The stored secret hash changed between its check and the write's lock. */
class SecretMoved extends Error {}

/**
 * The hash to store for a Client's `secret`: none when there is no secret in the body, none either
 * (`kept`: the hash it matched) when it is the secret the record holds already — the same manifest
 * applied again changes nothing, as the operator's reconcile does (operator/controllers/client.ts) —
 * else a new argon2id hash. Both before the lock: argon2 takes a while, and the lock holds every
 * other write.
 */
async function clientSecretHash(
  svc: Pick<WriterServices, 'pool' | 'secrets' | 'argon2'>,
  id: string,
  secret: string | undefined,
  mayKeep: boolean,
): Promise<{ hash?: string } | { kept: string; hash?: undefined }> {
  if (secret === undefined) return {};
  const stored = mayKeep ? (await clients.read(svc.pool, id))?.secretHash : undefined;
  if (stored && (await svc.secrets.verify(id, stored, secret, { lane: 'write' }))) return { kept: stored };
  return { hash: await svc.argon2.hash(secret) };
}

/**
 * The sealed secret to store: undefined (keep the one stored) when there is none in the body, or it is
 * the one stored already, as `unsealStored` reads it (a value it cannot read, sealed under another
 * factor key, is sealed anew).
 */
function sealedIfNew(
  secret: string | undefined,
  unsealStored: () => string | undefined,
  seal: (secret: string) => Buffer,
): Buffer | undefined {
  if (secret === undefined) return undefined;
  let stored: string | undefined;
  try {
    stored = unsealStored();
  } catch {
    stored = undefined;
  }
  return secret === stored ? undefined : seal(secret);
}

async function writePolicy(svc: WriterServices, policy: AccessPolicy, mustBeNew: boolean, locked: Locked): Promise<Written> {
  checkReserved(svc, 'AccessPolicy', policy.id, policy);
  checkPolicyCompiles(policy);
  return locked(policy, async (tx, existing) => {
    if (mustBeNew && existing) {
      throw new ApiError(409, 'conflict', `AccessPolicy "${policy.id}" already exists; PUT /AccessPolicy/${policy.id} replaces it`);
    }
    // A policy guards one thing (docs/architecture.md §7): its target is part of its identity.
    const was = (existing?.resource as AccessPolicy | undefined)?.app;
    if (existing && was !== policy.app) {
      const target = was ? `app "${was}"` : "the box's own API";
      throw ValidationError.field(policy, 'app', `cannot change: this policy guards ${target}; create another policy for another target`);
    }
    const { stored, created } = await accessPolicies.write(tx, policy, { managedBy: null });
    return { resource: stored.resource as Resource, created, secretChanged: false };
  });
}

async function writeApp(svc: WriterServices, app: App, mustBeNew: boolean, locked: Locked): Promise<Written> {
  // An App's audience is its own: not the box's (here), nor another App's (the database's unique index).
  const clash = boxAudienceClash(app, svc.config.baseUrl);
  if (clash) throw ValidationError.field(app, 'audience', clash);
  checkClaimsCompile(app);
  return locked(app, async (tx, existing) => {
    if (mustBeNew && existing) throw new ApiError(409, 'conflict', `App "${app.id}" already exists; PUT /App/${app.id} replaces it`);
    try {
      const { stored, created } = await apps.write(tx, app, { managedBy: null });
      return { resource: stored.resource as Resource, created, secretChanged: false };
    } catch (err) {
      if (err instanceof ConstraintViolation) throw ValidationError.field(app, err.field, err.message);
      throw err;
    }
  });
}

async function writeIdentityProvider(
  svc: WriterServices,
  body: ResourceBodies['IdentityProvider'],
  mustBeNew: boolean,
  locked: Locked,
): Promise<Written> {
  const { secret, ...provider } = body;
  return locked(provider, async (tx, existing) => {
    if (mustBeNew && existing)
      throw new ApiError(
        409,
        'conflict',
        `IdentityProvider "${provider.id}" already exists; PUT /IdentityProvider/${provider.id} replaces it`,
      );
    const secretSealed = sealedIfNew(
      secret,
      () => providerSecret(svc.factorKey, provider.id, existing?.secretSealed ?? null),
      (s) => sealProviderSecret(svc.factorKey, provider.id, s),
    );
    const { stored, created } = await identityProviders.write(tx, provider, { managedBy: null, secretSealed });
    return { resource: stored.resource as Resource, created, secretChanged: secretSealed !== undefined };
  });
}

/**
 * A Webhook's URL is checked when written, as it is again at each send (its name may resolve
 * elsewhere later), and its signing secret must be a Standard Webhooks one; the secret is sealed
 * (the box signs with it) and never shown, nor named in the audit's diff but as "(changed)".
 */
async function writeWebhook(svc: WriterServices, body: ResourceBodies['Webhook'], mustBeNew: boolean, locked: Locked): Promise<Written> {
  const { secret, ...webhook } = body;
  if (secret !== undefined) {
    const problem = secretProblem(secret);
    if (problem) throw ValidationError.field(body, 'secret', problem);
  }
  const urlProblem = administeredUrlProblem(webhook.url, svc.config.baseUrl);
  if (urlProblem) throw ValidationError.field(body, 'url', urlProblem);
  return locked(webhook, async (tx, existing) => {
    if (mustBeNew && existing)
      throw new ApiError(409, 'conflict', `Webhook "${webhook.id}" already exists; PUT /Webhook/${webhook.id} replaces it`);
    if (secret === undefined && !existing?.secretSealed) {
      throw ValidationError.field(
        body,
        'secret',
        'is required: the signing secret, "whsec_" followed by the base64 of 24 to 64 random bytes',
      );
    }
    const secretSealed = sealedIfNew(
      secret,
      () => webhookSecret(svc.factorKey, webhook.id, existing?.secretSealed ?? null),
      (s) => sealWebhookSecret(svc.factorKey, webhook.id, s),
    );
    const { stored, created } = await webhooks.write(tx, webhook, { managedBy: null, secretSealed });
    return { resource: stored.resource as Resource, created, secretChanged: secretSealed !== undefined };
  });
}

/**
 * A Hook is checked as a Webhook is (its URL's shape now, its addresses at each call; a Standard
 * Webhooks secret), and more: its matchConditions compile, its caBundle holds certificates, and a
 * hook can check its calls (a signing secret, stored or given, or boxToken).
 */
async function writeHook(svc: WriterServices, body: ResourceBodies['Hook'], mustBeNew: boolean, locked: Locked): Promise<Written> {
  const { secret, ...hook } = body;
  const errors: FieldErrors = { ...conditionProblems(hook) };
  if (secret !== undefined) {
    const problem = secretProblem(secret);
    if (problem) errors.secret = [problem];
  }
  const urlProblem = hook.url === undefined ? undefined : administeredUrlProblem(hook.url, svc.config.baseUrl);
  if (urlProblem) errors.url = [urlProblem];
  const caProblem = hook.caBundle === undefined ? undefined : caBundleProblem(hook.caBundle);
  if (caProblem) errors.caBundle = [caProblem];
  if (Object.keys(errors).length) throw new ValidationError(body, errors);
  return locked(hook, async (tx, existing) => {
    if (mustBeNew && existing) throw new ApiError(409, 'conflict', `Hook "${hook.id}" already exists; PUT /Hook/${hook.id} replaces it`);
    if (secret === undefined && !existing?.secretSealed && hook.boxToken !== true)
      throw ValidationError.field(
        body,
        'secret',
        'is required unless boxToken is true: a hook must be able to check its calls (the signing secret, "whsec_" followed by the base64 of 24 to 64 random bytes)',
      );
    const secretSealed = sealedIfNew(
      secret,
      () => hookSecret(svc.factorKey, hook.id, existing?.secretSealed ?? null),
      (s) => sealHookSecret(svc.factorKey, hook.id, s),
    );
    const { stored, created } = await hooks.write(tx, hook, { managedBy: null, secretSealed });
    return { resource: stored.resource as Resource, created, secretChanged: secretSealed !== undefined };
  });
}

// One table and one writer per kind, typed together so that `kind` picks both (TypeScript's correlated unions).
const TABLES: { [K in ResourceKind]: ResourceTable<Resources[K]> } = {
  Client: clients,
  AccessPolicy: accessPolicies,
  App: apps,
  IdentityProvider: identityProviders,
  Webhook: webhooks,
  Hook: hooks,
};
const WRITERS: {
  [K in ResourceKind]: (svc: WriterServices, body: ResourceBodies[K], mustBeNew: boolean, locked: Locked) => Promise<Written>;
} = {
  Client: writeClient,
  AccessPolicy: writePolicy,
  App: writeApp,
  IdentityProvider: writeIdentityProvider,
  Webhook: writeWebhook,
  Hook: writeHook,
};

/** What the resource API uses: the records, and the caches a write through this process forgets at once. */
export type ResourceRouterServices = WriterServices & Pick<Needs, 'apps' | 'clients' | 'policyRecords' | 'readFence' | 'hooks' | 'argon2'>;

export function resourceRouter<K extends ResourceKind>(svc: ResourceRouterServices, kind: K, guard: RequestHandler): Router {
  const table = TABLES[kind];
  const write = WRITERS[kind];
  const router = new Router();
  const id = (req: Request): string => req.params.id as string;
  // This process's caches forget a changed record at once; other processes hear of it through the change feed.
  const forget = (resourceId: string): void => {
    if (kind === 'Client') {
      svc.clients.invalidate(resourceId);
    } else if (kind === 'AccessPolicy') {
      svc.policies.forget();
      svc.policyRecords.invalidate(resourceId);
    } else if (kind === 'App') {
      svc.apps.forget();
    } else if (kind === 'Hook') {
      svc.hooks.forget();
    }
    // IdentityProviders are read where they are used (the sign-in pages), not cached; Webhooks, at each event and send.
  };

  router.get(`/${kind}`, guard, async (req, res) => {
    const { total, resources } = await table.search(svc.pool, parseSearch(req.query));
    send(req, res, 200, bundle(total, resources));
  });

  // From memory, behind a read fence (api/cache/read-fence.ts): a GET after a PUT on any process sees the PUT.
  const cached = kind === 'Client' ? svc.clients : kind === 'AccessPolicy' ? svc.policyRecords : undefined;
  const fresh = (recordId: string): Promise<Stored<Resource> | undefined> =>
    cached
      ? svc.readFence.pass().then(
          () => cached.get(recordId) as Promise<Stored<Resource> | undefined>,
          () => table.read(svc.pool, recordId),
        )
      : table.read(svc.pool, recordId);

  router.get(`/${kind}/:id`, guard, async (req, res) => {
    const stored = await fresh(id(req));
    if (!stored) throw notFound(`${kind} "${id(req)}"`);
    send(req, res, 200, stored.resource);
  });

  router.post(`/${kind}`, ...resourceBody, guard, async (req, res) => {
    const body = req.body as Record<string, unknown> | undefined;
    if (kind === 'AccessPolicy' && body && typeof body === 'object' && body.id === undefined) body.id = randomUUID();
    const record = incoming(kind, body, undefined);
    const { resource } = await write(forThisRequest(svc, res), record, true, lockedWrite(svc, req, kind, record.id));
    forget(resource.id);
    res.location(`/${kind}/${encodeURIComponent(resource.id)}`);
    send(req, res, 201, resource);
  });

  router.put(`/${kind}/:id`, ...resourceBody, guard, async (req, res) => {
    const { resource, created } = await write(
      forThisRequest(svc, res),
      incoming(kind, req.body, id(req)),
      false,
      lockedWrite(svc, req, kind, id(req)),
    );
    forget(resource.id);
    send(req, res, created ? 201 : 200, resource);
  });

  router.delete(`/${kind}/:id`, guard, async (req, res) => {
    checkReserved(svc, kind, id(req), undefined);
    const removed = await lockedWrite(
      svc,
      req,
      kind,
      id(req),
    )<Stored<Resource> | undefined>(undefined, (tx) =>
      kind === 'Client' ? removeClient(svc, id(req), actorOf(req.principal!), tx) : table.remove(tx, id(req), null),
    );
    if (!removed) throw notFound(`${kind} "${id(req)}"`);
    forget(removed.resource.id);
    send(req, res, 200, removed.resource);
  });

  return router;
}
