// Mutual TLS (RFC 8705): whether the certificate a client presented authenticates it, and whether
// it is the one an access token is bound to. Pure: the certificate comes from the box's own TLS or a
// trusted proxy (api/http/client-certificate.ts reads it), the clock and the trusted CAs are given.
import { createHash, type KeyObject, X509Certificate } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import net from 'node:net';
import type { Client } from '../types.js';

/** The certificate a request came with: the client's own, and the intermediates sent with it (nearest first). */
export interface PresentedCertificate {
  leaf: X509Certificate;
  chain: X509Certificate[];
}

/** The certificate a request came with (undefined: none); an ApiError 400 for a forwarded one the box does not believe. */
export type CertificateOf = (req: IncomingMessage) => PresentedCertificate | undefined;

/** The client certificates of this box (built by api/http/client-certificate.ts): how a request's is read, and the CAs tls_client_auth trusts. */
export interface ClientCertificates {
  of: CertificateOf;
  /**
   * Only the certificate a trusted proxy forwarded, never the one of the box's own TLS: what the
   * decision point's HTTP doors read, whose peer is the gateway, not the client the gateway served.
   */
  forwarded: CertificateOf;
  trusted: readonly X509Certificate[];
}

/** RFC 8705's two methods (§2.1.1, §2.2.1), as a Client's token_endpoint_auth_method names them. */
export type CertificateMethod = Extract<
  NonNullable<Client['token_endpoint_auth_method']>,
  'tls_client_auth' | 'self_signed_tls_client_auth'
>;

export const isCertificateMethod = (method: string | undefined): method is CertificateMethod =>
  method === 'tls_client_auth' || method === 'self_signed_tls_client_auth';

/**
 * RFC 8705 §3.1: "The value of the x5t#S256 member is a base64url-encoded [RFC4648] SHA-256 [SHS] hash
 * ... of the DER encoding [X690] of the X.509 certificate [RFC5280]. The base64url-encoded value MUST
 * omit all trailing pad '=' characters".
 */
export const certificateThumbprint = (cert: X509Certificate): string => createHash('sha256').update(cert.raw).digest('base64url');

/** The PEM blocks of `text` as certificates (a CA bundle, a proxy's chain); throws on one that does not parse. */
export function pemCertificates(text: string): X509Certificate[] {
  const blocks = text.match(/-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g) ?? [];
  return blocks.map((block) => new X509Certificate(block));
}

const CLIENT_AUTH_EKU = '1.3.6.1.5.5.7.3.2';
const ANY_EKU = '2.5.29.37.0';

const validAt = (cert: X509Certificate, now: Date): boolean => new Date(cert.validFrom) <= now && now <= new Date(cert.validTo);

const issued = (cert: X509Certificate, by: X509Certificate): boolean => by.ca && cert.checkIssued(by) && cert.verify(by.publicKey);

/**
 * Why `presented` is not a certificate of the PKI the box trusts for clients (RFC 8705 §2.1: "the
 * client certificate ... chains to a trusted certificate authority"); undefined: it is. The chain is
 * judged here, whoever terminated TLS: a proxy told to ask for certificates without judging them
 * (NGINX's optional_no_ca) forwards any certificate at all.
 */
export function chainProblem(presented: PresentedCertificate, trusted: readonly X509Certificate[], now: Date): string | undefined {
  if (!trusted.length)
    return 'no CA is trusted for client certificates (BOXAUTH_CLIENT_CA_FILE is not set): tls_client_auth cannot succeed';
  const { leaf } = presented;
  // A CA's own certificate (the anchor itself, self-issued) is no client's.
  if (leaf.ca) return 'the client certificate is a CA certificate';
  const eku = leaf.keyUsage;
  if (eku?.length && !eku.includes(CLIENT_AUTH_EKU) && !eku.includes(ANY_EKU))
    return 'the client certificate is not meant for client authentication (its extended key usage lacks clientAuth)';
  let cert = leaf;
  for (let depth = 0; depth <= presented.chain.length; depth++) {
    if (!validAt(cert, now))
      return cert === leaf
        ? 'the client certificate is expired or not yet valid'
        : 'a certificate of its chain is expired or not yet valid';
    const anchor = trusted.find((ca) => issued(cert, ca));
    if (anchor) return validAt(anchor, now) ? undefined : 'the CA that issued it is expired or not yet valid';
    const next = presented.chain.find((c) => c !== cert && issued(cert, c));
    if (!next) break;
    cert = next;
  }
  return 'the client certificate is not issued by a CA trusted for client certificates (BOXAUTH_CLIENT_CA_FILE)';
}

/** One attribute of a distinguished name: its type (upper-cased) and value. */
type Attribute = [type: string, value: string];

/**
 * An RFC 4514 string as attributes, most significant first (RFC 4514 §2.1 writes the last RDN first):
 * `CN=orders,O=Example` is [[O, Example], [CN, orders]]. Escapes (`\,`, `\2C`) are read; multi-valued
 * RDNs (`+`) count as their attributes in order. Undefined: not a DN.
 */
export function parseDn(dn: string): Attribute[] | undefined {
  const out: Attribute[] = [];
  let type = '';
  let value = '';
  let inValue = false;
  const flush = (): boolean => {
    if (!inValue || !type.trim()) return false;
    out.push([type.trim().toUpperCase(), value.trim()]);
    type = '';
    value = '';
    inValue = false;
    return true;
  };
  for (let i = 0; i < dn.length; i++) {
    const c = dn[i]!;
    if (c === '\\') {
      const hex = /^[0-9a-fA-F]{2}/.exec(dn.slice(i + 1));
      const ch = hex ? String.fromCharCode(parseInt(hex[0], 16)) : dn[i + 1];
      if (ch === undefined) return undefined;
      if (inValue) value += ch;
      else type += ch;
      i += hex ? 2 : 1;
    } else if (!inValue && c === '=') inValue = true;
    else if (inValue && (c === ',' || c === '+')) {
      if (!flush()) return undefined;
    } else if (inValue) value += c;
    else type += c;
  }
  if (!flush()) return undefined;
  return out.reverse();
}

/** A certificate's subject as attributes, in the certificate's order (Node.js writes one a line, most significant first). */
export function subjectAttributes(cert: X509Certificate): Attribute[] {
  return cert.subject
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const eq = line.indexOf('=');
      return [line.slice(0, eq).toUpperCase(), line.slice(eq + 1)];
    });
}

/** Short names RFC 4514 §3 and OpenSSL spell differently. */
const TYPE_ALIASES: Record<string, string> = { EMAILADDRESS: 'EMAILADDRESS', E: 'EMAILADDRESS', S: 'ST', UID: 'UID', USERID: 'UID' };
const sameType = (a: string, b: string): boolean => (TYPE_ALIASES[a] ?? a) === (TYPE_ALIASES[b] ?? b);

/** Whether two DNs are the same: attribute by attribute, types case-insensitively, values exactly. */
export function sameDn(registered: string, cert: X509Certificate): boolean {
  const want = parseDn(registered);
  const have = subjectAttributes(cert);
  return (
    want !== undefined &&
    want.length === have.length &&
    want.every(([type, value], i) => sameType(type, have[i]![0]) && value === have[i]![1])
  );
}

/** The SAN entries of a certificate, by kind (Node.js's names: DNS, URI, IP Address, email); quoted values read. */
export function subjectAltNames(cert: X509Certificate): { kind: string; value: string }[] {
  const text = cert.subjectAltName;
  if (!text) return [];
  const out: { kind: string; value: string }[] = [];
  // Node.js quotes a value holding a comma or a quote as a JSON string.
  const entry = /(?:^|, )([A-Za-z ]+):("(?:[^"\\]|\\.)*"|[^,]*)/g;
  for (let m = entry.exec(text); m; m = entry.exec(text)) {
    const raw = m[2]!;
    let value = raw;
    if (raw.startsWith('"')) {
      try {
        value = JSON.parse(raw) as string;
      } catch {
        continue;
      }
    }
    out.push({ kind: m[1]!, value });
  }
  return out;
}

/** RFC 5952 §8: the registered address and the SAN's are compared in binary. */
function sameIp(a: string, b: string): boolean {
  const family = net.isIP(a);
  if (!family || family !== net.isIP(b)) return false;
  const list = new net.BlockList();
  list.addAddress(a, family === 6 ? 'ipv6' : 'ipv4');
  return list.check(b, family === 6 ? 'ipv6' : 'ipv4');
}

/** The one subject a tls_client_auth client registered (RFC 8705 §2.1.2: "exactly one"), as a rule to name in refusals. */
type Registered = Pick<
  Client,
  | 'tls_client_auth_subject_dn'
  | 'tls_client_auth_san_dns'
  | 'tls_client_auth_san_uri'
  | 'tls_client_auth_san_ip'
  | 'tls_client_auth_san_email'
>;

/**
 * Why `cert` is not the certificate `client` registered for tls_client_auth (RFC 8705 §2.1.2: "the
 * certificate subject value that the authorization server is to expect"); undefined: it is. Only the
 * registered field is compared: with a SAN registered, a certificate of the right DN but another SAN is refused.
 */
export function subjectProblem(client: Registered, cert: X509Certificate): string | undefined {
  if (client.tls_client_auth_subject_dn !== undefined)
    return sameDn(client.tls_client_auth_subject_dn, cert)
      ? undefined
      : "subject DN does not match the client's tls_client_auth_subject_dn";
  const sans = subjectAltNames(cert);
  const has = (kind: string, same: (value: string) => boolean): boolean => sans.some((s) => s.kind === kind && same(s.value));
  if (client.tls_client_auth_san_dns !== undefined) {
    const want = client.tls_client_auth_san_dns.toLowerCase();
    return has('DNS', (v) => v.toLowerCase() === want)
      ? undefined
      : "no dNSName SAN of the certificate is the client's tls_client_auth_san_dns";
  }
  if (client.tls_client_auth_san_uri !== undefined) {
    const want = client.tls_client_auth_san_uri;
    return has('URI', (v) => v === want) ? undefined : "no URI SAN of the certificate is the client's tls_client_auth_san_uri";
  }
  if (client.tls_client_auth_san_ip !== undefined) {
    const want = client.tls_client_auth_san_ip;
    return has('IP Address', (v) => sameIp(want, v))
      ? undefined
      : "no iPAddress SAN of the certificate is the client's tls_client_auth_san_ip";
  }
  if (client.tls_client_auth_san_email !== undefined) {
    const want = client.tls_client_auth_san_email;
    return has('email', (v) => v === want) ? undefined : "no rfc822Name SAN of the certificate is the client's tls_client_auth_san_email";
  }
  return 'the client registered no certificate subject (tls_client_auth_subject_dn or tls_client_auth_san_*)';
}

/**
 * Why `cert` holds none of `keys` (self_signed_tls_client_auth, RFC 8705 §2.2: "The client is
 * successfully authenticated if the certificate that it presented during the handshake matches one of
 * the certificates configured or registered for that particular client"); undefined: it holds one.
 * The public key is compared (a JWK's x5c must hold the same key, RFC 7517 §4.7): TLS proved the client
 * holds its private half. "In contrast to the PKI method, the client's certificate chain is not validated".
 */
export function selfSignedProblem(keys: readonly KeyObject[], cert: X509Certificate): string | undefined {
  const presented = cert.publicKey.export({ type: 'spki', format: 'der' });
  const match = keys.some((key) => key.type === 'public' && key.export({ type: 'spki', format: 'der' }).equals(presented));
  return match ? undefined : "the certificate's public key is none of the client's registered keys (jwks or jwks_uri)";
}

/**
 * Why a request may not use an access token bound to the certificate `x5t`; undefined: it may. RFC 8705
 * §3: "The protected resource MUST obtain the client certificate used for mutual TLS authentication and
 * MUST verify that the certificate matches the certificate associated with the access token. If they do
 * not match, the resource access attempt MUST be rejected with an error, per [RFC6750], using an HTTP 401
 * status code and the "invalid_token" error code." The certificate comes as the box reads it everywhere
 * (api/http/client-certificate.ts): its own TLS, or a trusted proxy's header.
 */
export function boundCertificateProblem(x5t: string, presented: PresentedCertificate | undefined): string | undefined {
  if (!presented) return 'no client certificate: the access token is bound to one (RFC 8705 §3); present it over mutual TLS';
  return certificateThumbprint(presented.leaf) === x5t
    ? undefined
    : 'certificate not bound: the access token is bound to another client certificate (RFC 8705 §3)';
}
