// Client authentication with a workload's own token (RFC 7521 / RFC 7523 client
// assertion), checked against the issuers the box trusts and what a Client is bound
// to (auth.workload): a Kubernetes ServiceAccount (serviceAccounts), or a subject
// of another issuer (federated: another cluster, GitHub Actions, GitLab CI).
import { createHash, type KeyObject } from 'node:crypto';
import type { Config } from '../../config.js';
import type { RecordCache } from '../../cache/record-cache.js';
import { type TrustedIssuers, tokenAudiences, WorkloadError, type JwtParts } from './issuers.js';
import { workloadSettings, type WorkloadBindings } from './bindings.js';
import { bindingNames } from '../../federated-subjects.js';
import type { Stored } from '../../store/resources.js';
import type { Client } from '../../types.js';

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
interface Needs {
  config: Config;
  clients: RecordCache<Stored<Client>>;
  issuers: TrustedIssuers;
  verifiedAssertions: VerifiedAssertions;
  workloadBindings: WorkloadBindings;
}

/** What verifying a workload token needs. */
export type WorkloadServices = Pick<Needs, 'clients' | 'config' | 'issuers' | 'verifiedAssertions' | 'workloadBindings'>;

export const JWT_BEARER = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
/** Clock skew allowed between the issuer and the box. */
const SKEW_SECONDS = 60;

export interface WorkloadIdentity {
  issuer: string;
  namespace: string;
  serviceAccount: string;
  serviceAccountUid?: string;
  pod?: { name: string; uid?: string };
}

function parts(token: string): JwtParts {
  const [h, p, s] = token.split('.');
  if (!h || !p || s === undefined || token.split('.').length !== 3) throw new WorkloadError('client_assertion is not a JWT');
  try {
    const header = JSON.parse(Buffer.from(h, 'base64url').toString('utf8')) as Record<string, unknown>;
    const payload = JSON.parse(Buffer.from(p, 'base64url').toString('utf8')) as Record<string, unknown>;
    if (typeof header !== 'object' || typeof payload !== 'object' || !header || !payload) throw new Error('not objects');
    return { header, payload, signingInput: Buffer.from(`${h}.${p}`), signature: Buffer.from(s, 'base64url') };
  } catch {
    throw new WorkloadError('client_assertion is not a JWT');
  }
}

const SA_SUBJECT = /^system:serviceaccount:([a-z0-9]([-a-z0-9]*[a-z0-9])?):([a-z0-9]([-a-z0-9.]*[a-z0-9])?)$/;

function identityOf(issuer: string, payload: Record<string, unknown>): WorkloadIdentity {
  const sub = payload.sub;
  const match = typeof sub === 'string' ? SA_SUBJECT.exec(sub) : null;
  if (!match)
    throw new WorkloadError(
      `the token's subject ${JSON.stringify(sub)} is not a Kubernetes ServiceAccount (system:serviceaccount:<namespace>:<name>)`,
    );
  const k8s = (payload['kubernetes.io'] ?? {}) as { serviceaccount?: { uid?: string }; pod?: { name?: string; uid?: string } };
  return {
    issuer,
    namespace: match[1]!,
    serviceAccount: match[3]!,
    ...(k8s.serviceaccount?.uid ? { serviceAccountUid: k8s.serviceaccount.uid } : {}),
    ...(k8s.pod?.name ? { pod: { name: k8s.pod.name, ...(k8s.pod.uid ? { uid: k8s.pod.uid } : {}) } } : {}),
  };
}

function checkTimes(payload: Record<string, unknown>, now: number): void {
  const { exp, nbf, iat } = payload;
  if (typeof exp !== 'number') throw new WorkloadError('the token has no expiry (exp)');
  if (exp + SKEW_SECONDS <= now)
    throw new WorkloadError(`the token expired at ${new Date(exp * 1000).toISOString()}; read the projected token file again`);
  if (typeof nbf === 'number' && nbf - SKEW_SECONDS > now) throw new WorkloadError('the token is not valid yet (nbf)');
  if (typeof iat === 'number' && iat - SKEW_SECONDS > now)
    throw new WorkloadError('the token was issued in the future (iat); check the clocks');
}

/** Refuses a token not issued for the box (its URL or token endpoint), or for `bound`, a federated binding's own audience. */
function checkAudience(svc: Pick<WorkloadServices, 'config'>, payload: Record<string, unknown>, bound?: string): void {
  const aud = payload.aud;
  const audiences = Array.isArray(aud) ? aud : [aud];
  const wanted = bound ? [bound] : tokenAudiences(svc.config);
  if (!audiences.some((a) => typeof a === 'string' && wanted.includes(a))) {
    throw new WorkloadError(
      bound
        ? `wrong audience: the token is for ${JSON.stringify(aud)}, but the client's binding accepts only ${bound}`
        : `wrong audience: the token is for ${JSON.stringify(aud)}, but this box accepts only ${wanted[0]} (or ${wanted[1]}); ` +
            `project the token with audience ${wanted[0]}`,
    );
  }
}

/** A subject of another issuer, bound to a client by auth.workload.federated. */
export interface FederatedIdentity {
  issuer: string;
  subject: string;
}

/** Whether `client` accepts this ServiceAccount; a reason when it does not. */
function bindingProblem(client: Client, who: WorkloadIdentity): string | undefined {
  const settings = workloadSettings(client);
  if (!settings?.serviceAccounts?.length) return `client "${client.id}" is not bound to any ServiceAccount (auth.workload)`;
  if (settings.issuer && settings.issuer !== who.issuer) return `client "${client.id}" accepts tokens of issuer ${settings.issuer} only`;
  const binding = settings.serviceAccounts.find((b) => b.namespace === who.namespace && b.name === who.serviceAccount);
  if (!binding) return `ServiceAccount ${who.namespace}/${who.serviceAccount} is not bound to client "${client.id}"`;
  if (binding.uid && binding.uid !== who.serviceAccountUid) {
    return `ServiceAccount ${who.namespace}/${who.serviceAccount} is not the one bound to client "${client.id}" (its uid changed: deleted and re-created?)`;
  }
  return undefined;
}

/** At most this long a verified token is remembered (and never past its exp). */
const REMEMBER_MS = 60_000;

/**
 * Workload tokens whose signature was verified against an issuer's published keys,
 * by the SHA-256 of the token: a pod presents the same projected token for minutes,
 * and checking its RS256 signature each time cost most of a token request. Only
 * the signature is remembered: times, audience and the client's bindings are
 * checked on every request.
 */
export class VerifiedAssertions {
  private readonly entries = new Map<string, Verified & { until: number }>();

  constructor(private readonly maxEntries = 10_000) {}

  /** The verification of `digest`, while it stands: within its time, and its key still published (`holds`). */
  get(digest: string, now: number, holds: (issuer: string, key: KeyObject) => boolean): Verified | undefined {
    const entry = this.entries.get(digest);
    if (entry && entry.until > now && holds(entry.issuer, entry.key)) return entry;
    if (entry) this.entries.delete(digest);
    return undefined;
  }

  remember(digest: string, verified: Verified, now: number): void {
    const exp = typeof verified.payload.exp === 'number' ? verified.payload.exp * 1000 : now;
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(digest, { ...verified, until: Math.min(exp, now + REMEMBER_MS) });
  }
}

/** A token whose signature `key` of `issuer` verified. */
interface Verified {
  issuer: string;
  payload: Record<string, unknown>;
  key: KeyObject;
}

/** The verified payload and issuer of a workload token: remembered, or checked now. */
async function verifiedToken(
  svc: Pick<WorkloadServices, 'issuers' | 'verifiedAssertions'>,
  assertion: string,
  nowMs: number,
): Promise<{ issuer: string; payload: Record<string, unknown> }> {
  const digest = createHash('sha256').update(assertion).digest('hex');
  const known = svc.verifiedAssertions.get(digest, nowMs, (issuer, key) => svc.issuers.holds(issuer, key));
  if (known) return known;
  const jwt = parts(assertion);
  if (jwt.header.alg === 'none' || !jwt.signature.length) throw new WorkloadError('the token is not signed');
  const iss = jwt.payload.iss;
  const issuer = typeof iss === 'string' ? await svc.issuers.find(iss) : undefined;
  if (!issuer) {
    // Which issuers are trusted is not said: anyone may send a token naming any iss.
    throw new WorkloadError(`issuer ${JSON.stringify(iss)} is not trusted by this box; add it to the Box's spec.trustedIssuers`);
  }
  const key = await issuer.verify(assertion, jwt);
  if (issuer.cacheable && key) svc.verifiedAssertions.remember(digest, { issuer: issuer.issuer, payload: jwt.payload, key }, nowMs);
  return { issuer: issuer.issuer, payload: jwt.payload };
}

/** A token of an issuer the box trusts, signed by it and within its times (its audience is checked by the caller). */
async function timelyToken(
  svc: Pick<WorkloadServices, 'issuers' | 'verifiedAssertions'>,
  token: string,
  now: number,
): Promise<{ issuer: string; payload: Record<string, unknown> }> {
  const verified = await verifiedToken(svc, token, now * 1000);
  checkTimes(verified.payload, now);
  return verified;
}

/**
 * A JWT of an issuer the box trusts (its cluster's ServiceAccount issuer, or
 * spec.trustedIssuers), issued for this box and within its times: its issuer and
 * claims. Token exchange (RFC 8693 subject and actor tokens) takes these checks.
 * Throws WorkloadError naming what to fix.
 */
export async function verifyTrustedJwt(
  svc: Pick<WorkloadServices, 'config' | 'issuers' | 'verifiedAssertions'>,
  token: string,
  now = Math.floor(Date.now() / 1000),
): Promise<{ issuer: string; payload: Record<string, unknown> }> {
  const verified = await timelyToken(svc, token, now);
  checkAudience(svc, verified.payload);
  return verified;
}

/** The ServiceAccount a token's claims name, or undefined when its subject is not one. */
export function serviceAccountOf(issuer: string, payload: Record<string, unknown>): WorkloadIdentity | undefined {
  try {
    return identityOf(issuer, payload);
  } catch {
    return undefined;
  }
}

/** Who a workload token says its bearer is, and whether its issuer is the box's own cluster's. */
interface Presented {
  issuer: string;
  cluster: boolean;
  subject: string;
  payload: Record<string, unknown>;
  account: WorkloadIdentity | undefined;
}

/** The workload as a refusal names it: its ServiceAccount, or its subject and issuer. */
const presentedName = (who: Presented): string =>
  who.account
    ? `ServiceAccount ${who.account.namespace}/${who.account.serviceAccount}`
    : `subject ${JSON.stringify(who.subject)} of issuer ${who.issuer}`;

/**
 * The one client bound to the token's workload, when the request names none: by its ServiceAccount
 * (a token of the box's cluster), or by a federated binding (a subject of another issuer), or both
 * (another cluster's ServiceAccount bound either way).
 */
async function routedClient(svc: WorkloadServices, who: Presented): Promise<string> {
  const federated = who.cluster ? [] : await svc.workloadBindings.clientsOfSubject(who.issuer, who.subject);
  const byAccount = who.account ? await svc.workloadBindings.clientsOf(who.account.namespace, who.account.serviceAccount) : [];
  const ids = [...new Set([...federated, ...byAccount])];
  const named = presentedName(who);
  if (ids.length === 0) throw new WorkloadError(`${named} is not bound to any client`);
  // Which clients is not said: the token's audience is checked only once its client is known, so a
  // service the workload sent its token to (another audience) could replay it here to learn them.
  if (ids.length > 1) throw new WorkloadError(`${named} is bound to several clients; send client_id`);
  return ids[0]!;
}

/**
 * The client a workload token authenticates, and who the workload is. With no
 * client_id, the client is the one bound to the token's workload, if exactly one
 * is. A token of the box's own cluster is bound by auth.workload.serviceAccounts
 * only (where the Box's workloadNamespaces hold); one of another issuer by a
 * federated binding, or by serviceAccounts (another cluster's ServiceAccount,
 * as before federated bindings existed). Every refusal is a WorkloadError naming what to fix.
 */
export async function authenticateWorkload(
  svc: WorkloadServices,
  assertion: string,
  clientId: string | undefined,
  now = Math.floor(Date.now() / 1000),
): Promise<{ client: Stored<Client>; identity?: WorkloadIdentity; federated?: FederatedIdentity }> {
  const { issuer, payload } = await timelyToken(svc, assertion, now);
  const sub = payload.sub;
  if (typeof sub !== 'string' || !sub) throw new WorkloadError('the token names no subject (sub)');
  const who: Presented = {
    issuer,
    cluster: await svc.issuers.isCluster(issuer),
    subject: sub,
    payload,
    account: serviceAccountOf(issuer, payload),
  };
  // The cluster's own issuer issues ServiceAccount tokens only: say so of any other subject.
  if (who.cluster && !who.account) identityOf(issuer, payload);

  const id = clientId ?? (await routedClient(svc, who));
  const client = await svc.clients.get(id);
  // A client that does not exist is refused as one that does not bind the token's workload: which
  // client ids exist is not told, not even to a workload the box trusts.
  if (!client) {
    throw new WorkloadError(`${presentedName(who)} is not bound to client "${id}"${who.cluster ? '' : ' (auth.workload.federated)'}`);
  }

  const binding = who.cluster ? undefined : workloadSettings(client.resource)?.federated?.find((b) => bindingNames(b, issuer, sub));
  if (binding) {
    checkAudience(svc, payload, binding.audience);
    return { client, federated: { issuer, subject: sub } };
  }
  if (!who.account || (!who.cluster && !workloadSettings(client.resource)?.serviceAccounts?.length)) {
    throw new WorkloadError(
      `subject ${JSON.stringify(sub)} of issuer ${issuer} is not bound to client "${client.resource.id}" (auth.workload.federated)`,
    );
  }
  // serviceAccounts without an issuer are this cluster's: another issuer's token of the same
  // namespace and name (another cluster, anyone who can make ServiceAccounts there) is not them.
  if (!who.cluster && !workloadSettings(client.resource)?.issuer) {
    throw new WorkloadError(
      `client "${client.resource.id}" binds ServiceAccounts of this box's cluster; for another cluster's, set auth.workload.issuer ` +
        `to ${issuer}, or bind the subject in auth.workload.federated`,
    );
  }
  checkAudience(svc, payload);
  const problem = bindingProblem(client.resource, who.account);
  if (problem) throw new WorkloadError(problem);
  return { client, identity: who.account };
}
