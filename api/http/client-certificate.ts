// Where a request's client certificate comes from (mutual TLS, RFC 8705): the TLS the box serves
// itself (BOXAUTH_TLS_CLIENT_CERTIFICATES=request), or a proxy in front that terminated it and
// forwards the certificate in a header the operator names (BOXAUTH_CLIENT_CERT_HEADER): Envoy's
// x-forwarded-client-cert, NGINX's $ssl_client_escaped_cert, Traefik's X-Forwarded-Tls-Client-Cert or
// Caddy's base64 DER. The decision point's HTTP doors read only a forwarded one: their peer is the
// gateway, whose own TLS certificate is not its client's. A forwarded certificate is believed
// only from BOXAUTH_TRUSTED_PROXIES, the proxies whose X-Forwarded-For is believed; from anyone else
// the request is refused (400), not read as if it had none: a header that is ignored hides a proxy
// that is not listed (every client of a cert-bound token would be refused for no reason it is told),
// and a client that forged one learns at once that it is not believed.
import { X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { ConfigError, type Config } from '../config.js';
import { ApiError } from '../errors.js';
import {
  type CertificateOf,
  type ClientCertificates,
  pemCertificates,
  type PresentedCertificate,
} from '../credentials/client-certificate.js';
import { peerAddress, proxyCheck } from './client-address.js';

/** Envoy's header (XFCC); any other name is read as NGINX's URL-encoded PEM. */
export const XFCC = 'x-forwarded-client-cert';

/** How many certificates of a chain are read, past the client's own. */
const MAX_CHAIN = 4;

/** `where`: the header (or field) the certificate came in, as a refusal names it. */
const unreadable = (where: string, why: string): ApiError =>
  new ApiError(400, 'invalid_request', `${where} does not hold a client certificate: ${why}`);

/**
 * The elements of an XFCC value, each as its keys and values: elements are separated by ",", pairs by ";",
 * and a value holding either is quoted ("..." with \" inside), as Envoy writes them.
 */
export function xfccElements(value: string): Map<string, string>[] {
  const elements: Map<string, string>[] = [];
  let element = new Map<string, string>();
  let pair = '';
  let quoted = false;
  const endPair = (): void => {
    const eq = pair.indexOf('=');
    if (eq > 0) {
      let v = pair.slice(eq + 1).trim();
      if (v.startsWith('"') && v.endsWith('"') && v.length >= 2) v = v.slice(1, -1).replace(/\\"/g, '"');
      element.set(pair.slice(0, eq).trim().toLowerCase(), v);
    }
    pair = '';
  };
  for (let i = 0; i < value.length; i++) {
    const c = value[i]!;
    if (c === '\\' && quoted && value[i + 1] === '"') {
      pair += '\\"';
      i++;
    } else if (c === '"') {
      quoted = !quoted;
      pair += c;
    } else if (!quoted && c === ';') endPair();
    else if (!quoted && c === ',') {
      endPair();
      elements.push(element);
      element = new Map();
    } else pair += c;
  }
  // A quote left open swallowed whatever followed it, the proxy's own element perhaps: nothing in it is believed.
  if (quoted) throw unreadable(`the ${XFCC} header`, 'a quoted value does not end');
  endPair();
  elements.push(element);
  return elements.filter((e) => e.size);
}

function urlDecoded(where: string, text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    throw unreadable(where, 'bad percent-encoding');
  }
}

function parsed(where: string, pem: string): X509Certificate[] {
  try {
    return pemCertificates(pem);
  } catch {
    throw unreadable(where, 'a PEM block is not an X.509 certificate');
  }
}

/**
 * Certificates as base64 DER, comma-separated: Traefik's X-Forwarded-Tls-Client-Cert (passTLSClientCert
 * `pem: true` sends each PEM block's body, its delimiters and line breaks removed, then URL-escaped) and
 * Caddy's {http.request.tls.client.certificate_der_base64}.
 */
function bareCertificates(where: string, text: string): X509Certificate[] {
  const values = text
    .split(',')
    .map((v) => v.trim())
    .filter(Boolean);
  if (values.some((v) => !/^[A-Za-z0-9+/]+=*$/.test(v))) throw unreadable(where, 'a value is neither a PEM block nor base64 DER');
  try {
    return values.map((v) => new X509Certificate(Buffer.from(v, 'base64')));
  } catch {
    throw unreadable(where, 'a base64 value is not an X.509 certificate');
  }
}

/** The certificate a proxy forwarded in `header` (`where`: how a refusal names it). */
export function forwardedCertificate(header: string, value: string, where = `the ${header} header`): PresentedCertificate {
  if (header === XFCC) {
    // One element: what the proxy set (Envoy's forward_client_cert_details SANITIZE_SET). With APPEND_FORWARD
    // the client's own header comes first, and a value it wrote (an open quote, a quote in its certificate's
    // subject) can make the proxy's element unreadable as such: several elements are refused, not picked from.
    const elements = xfccElements(value);
    if (elements.length !== 1)
      throw unreadable(where, `it holds ${elements.length} elements, not one: set Envoy's forward_client_cert_details to SANITIZE_SET`);
    const element = elements[0];
    const cert = element?.get('cert');
    if (!cert) throw unreadable(where, 'its last element has no Cert (Envoy: set_current_client_cert_details { cert: true })');
    const [leaf] = parsed(where, urlDecoded(where, cert));
    if (!leaf) throw unreadable(where, 'Cert holds no PEM certificate');
    const chain = element?.get('chain');
    const rest = chain ? parsed(where, urlDecoded(where, chain)).filter((c) => !c.raw.equals(leaf.raw)) : [];
    return { leaf, chain: rest.slice(0, MAX_CHAIN) };
  }
  const text = urlDecoded(where, value);
  const [leaf, ...rest] = text.includes('-----BEGIN') ? parsed(where, text) : bareCertificates(where, text);
  if (!leaf)
    throw unreadable(
      header,
      'no certificate (NGINX: $ssl_client_escaped_cert; Traefik: passTLSClientCert pem; Caddy: {http.request.tls.client.certificate_der_base64})',
    );
  return { leaf, chain: rest.slice(0, MAX_CHAIN) };
}

/** The certificate the client presented in the box's own TLS handshake, and the chain it sent. */
function handshakeCertificate(req: IncomingMessage): PresentedCertificate | undefined {
  const socket = req.socket as Partial<TLSSocket>;
  const leaf = socket.getPeerX509Certificate?.();
  if (!leaf) return undefined;
  const chain: X509Certificate[] = [];
  for (let c = leaf.issuerCertificate; c && chain.length < MAX_CHAIN && !chain.some((x) => x.raw.equals(c!.raw)); c = c.issuerCertificate) {
    if (c.raw.equals(leaf.raw)) break;
    chain.push(c);
  }
  return { leaf, chain };
}

type CertificateConfig = Pick<Config, 'clientCertificates' | 'trustedProxies'>;

/**
 * The certificate a proxy forwarded in BOXAUTH_CLIENT_CERT_HEADER, when the request carries one: from
 * a trusted proxy only, from anyone else a 400.
 */
function forwardedReader(config: CertificateConfig): CertificateOf {
  const { header } = config.clientCertificates;
  const isProxy = proxyCheck(config.trustedProxies);
  return (req) => {
    if (header === undefined) return undefined;
    const raw = req.headers[header];
    const value = Array.isArray(raw) ? raw.join(', ') : raw;
    if (value === undefined || value.trim() === '') return undefined;
    const peer = peerAddress(req);
    if (!isProxy(peer))
      throw new ApiError(
        400,
        'invalid_request',
        `the ${header} header forwards a client certificate, which this box believes only from its trusted proxies (BOXAUTH_TRUSTED_PROXIES): ${peer} is not one`,
      );
    return forwardedCertificate(header, value);
  };
}

/** How this box reads a request's client certificate, as `config` says. */
export function certificateReader(config: CertificateConfig): CertificateOf {
  const forwarded = forwardedReader(config);
  const isProxy = proxyCheck(config.trustedProxies);
  return (req) => {
    const cert = forwarded(req);
    if (cert) return cert;
    // A proxy's own certificate, in its TLS to the box, is not its client's.
    if (config.clientCertificates.header !== undefined && isProxy(peerAddress(req))) return undefined;
    return handshakeCertificate(req);
  };
}

/** BOXAUTH_CLIENT_CA_FILE's CAs, read once; a file without a CA certificate, or with another kind, is a ConfigError. */
function trustedCas(caFile: string | undefined): X509Certificate[] {
  if (caFile === undefined) return [];
  let cas: X509Certificate[];
  try {
    cas = pemCertificates(fs.readFileSync(caFile, 'utf8'));
  } catch (err) {
    throw new ConfigError(`BOXAUTH_CLIENT_CA_FILE: ${caFile} is not a PEM bundle of certificates (${(err as Error).message})`);
  }
  if (!cas.length) throw new ConfigError(`BOXAUTH_CLIENT_CA_FILE: ${caFile} holds no PEM certificate`);
  if (cas.some((c) => !c.ca))
    throw new ConfigError(`BOXAUTH_CLIENT_CA_FILE: ${caFile} holds a certificate that is not a CA's (basicConstraints CA:TRUE)`);
  return cas;
}

export function clientCertificates(config: CertificateConfig): ClientCertificates {
  return { of: certificateReader(config), forwarded: forwardedReader(config), trusted: trustedCas(config.clientCertificates.caFile) };
}
