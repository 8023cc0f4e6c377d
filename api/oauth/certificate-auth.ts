// Mutual-TLS client authentication (RFC 8705 §2) at the token, introspection and revocation
// endpoints, and the certificate an access token is bound to (§3). What a certificate must be is
// judged in ./client-certificate.ts; here, which client, its keys, the throttle and the log.
import crypto, { type JsonWebKey, type KeyObject } from 'node:crypto';
import type { Logger } from '../log.js';
import type { RecordCache } from '../cache/record-cache.js';
import { type FailureThrottle, addressKey } from '../credentials/throttle.js';
import { OAuthError } from '../credentials/errors.js';
import type { Stored } from '../store/resources.js';
import type { Client } from '../types.js';
import {
  certificateThumbprint,
  chainProblem,
  type CertificateMethod,
  isCertificateMethod,
  type ClientCertificates,
  type PresentedCertificate,
  selfSignedProblem,
  subjectProblem,
} from '../credentials/client-certificate.js';

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
interface Needs {
  log: Logger;
  clients: RecordCache<Stored<Client>>;
  clientThrottle: FailureThrottle;
  clientCertificates: ClientCertificates;
}

export type CertificateAuthServices = Needs;

/** What a request presents of a client (./client-auth.ts's PresentedClient: not imported, which imports this). */
interface Presented {
  clientId: string | undefined;
  secret: string | undefined;
  assertion?: string;
  address: string;
  certificate?: (() => PresentedCertificate | undefined) | undefined;
}

/** A client authenticated by its certificate: its method and the x5t#S256 its tokens are bound to. */
type Certified = Stored<Client> & { method: CertificateMethod; certificate: string };

/**
 * The public keys a self_signed_tls_client_auth client registered (RFC 8705 §2.2.2: "the existing
 * jwks_uri or jwks metadata parameters from [RFC7591] are used to convey the client's certificates").
 * Written keys are held to api/client-keys.ts's rules already.
 */
function registeredKeys(client: Client): KeyObject[] {
  return (client.jwks?.keys ?? []).map((jwk) => crypto.createPublicKey({ key: jwk as JsonWebKey, format: 'jwk' }));
}

/** Why `cert` does not authenticate `client` by its method; undefined: it does. */
function certificateProblem(svc: Needs, client: Client, method: CertificateMethod, cert: PresentedCertificate): string | undefined {
  if (method === 'tls_client_auth')
    return chainProblem(cert, svc.clientCertificates.trusted, new Date()) ?? subjectProblem(client, cert.leaf);
  if (client.jwks === undefined)
    return "self_signed_tls_client_auth with a jwks_uri is not supported yet: register the certificate's key in jwks";
  return selfSignedProblem(registeredKeys(client), cert.leaf);
}

/**
 * The client, authenticated by the certificate of the request (RFC 8705 §2: tls_client_auth, or
 * self_signed_tls_client_auth), when it names by client_id a client whose token_endpoint_auth_method
 * is one of them and came with a certificate; invalid_client naming the rule that failed when the
 * certificate is not the client's. Undefined otherwise: a request without a certificate is one of
 * client_id alone, and gets its answer (one for every client, whether it exists or not: ./client-auth.ts).
 * A refusal is a failed attempt of the address (throttle.ts), as a wrong secret is.
 */
export async function certificateAuthentication(svc: Needs, presented: Presented): Promise<Certified | undefined> {
  if (presented.clientId === undefined || presented.assertion !== undefined || presented.secret !== undefined) return undefined;
  const client = await svc.clients.get(presented.clientId);
  const method = client?.resource.token_endpoint_auth_method;
  // Only a client of RFC 8705's methods authenticates with a certificate (a private_key_jwt one with its assertions, a secret one with its secret).
  if (!client || !isCertificateMethod(method)) return undefined;
  const attempt = [addressKey(presented.address)];
  svc.clientThrottle.reserve(attempt);
  let problem: string | undefined;
  let cert: PresentedCertificate | undefined;
  try {
    cert = presented.certificate?.();
    if (cert) problem = certificateProblem(svc, client.resource, method, cert);
  } catch (err) {
    svc.clientThrottle.release(attempt); // not decided (a forwarded certificate not believed: 400): not a failure
    throw err;
  }
  if (!cert) {
    svc.clientThrottle.release(attempt); // judged as client_id alone, which counts its own attempt
    return undefined;
  }
  if (problem) {
    // The rule that failed, never the certificate, goes to the log and the answer.
    svc.log.info(
      { event: 'client_certificate_refused', client: client.resource.id, method, reason: problem },
      'client certificate refused',
    );
    throw new OAuthError('invalid_client', `client authentication failed (${method}): ${problem}`);
  }
  svc.clientThrottle.release(attempt);
  return { ...client, method, certificate: certificateThumbprint(cert.leaf) };
}

/**
 * The x5t#S256 the access tokens of this request are bound to (RFC 8705 §3): the certificate the client
 * authenticated with; or, for a client that asks for bound tokens (tls_client_certificate_bound_access_tokens,
 * §3.4) and authenticated otherwise, the certificate it presented, which it must. Undefined: unbound.
 */
export function certificateBinding(
  request: Pick<Presented, 'certificate'>,
  client: Stored<Client> & { certificate?: string | undefined },
): string | undefined {
  if (client.certificate) return client.certificate;
  if (client.resource.tls_client_certificate_bound_access_tokens !== true) return undefined;
  const cert = request.certificate?.();
  // §3.4 leaves it to the server to refuse or to issue an unbound token: a client that asked for bound
  // tokens would not know its token could be used without the certificate.
  if (!cert)
    throw new OAuthError(
      'invalid_request',
      `no client certificate: client "${client.resource.id}" asks for certificate-bound access tokens (tls_client_certificate_bound_access_tokens), so its token requests must come over mutual TLS`,
    );
  return certificateThumbprint(cert.leaf);
}
