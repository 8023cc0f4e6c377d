// The SAML apps of the box (Client.saml): each one's service provider as its metadata says it
// (SAML 2.0 Metadata §2.4.4 SPSSODescriptor): its entity ID, where its assertions go
// (AssertionConsumerService, matched to the letter), the certificates it signs with and those the
// box encrypts to. The metadata is written into the Client (saml.metadata.xml: read when written,
// so a bad document is refused then) or fetched from saml.metadata.url through the box's one
// fetch of documents a stranger names (api/document-fetch.ts: never a special-use address
// unless the box's settings allow it, as jwks_uri and sector_identifier_uri), kept for its
// caching headers within the box's bounds; what each fetch came to is recorded as the app's
// status (./metadata-status.ts). The entity ID is kept beside the client's id, not as
// it: an entity ID is a URL, a client id a record name.
import { createHash, X509Certificate } from 'node:crypto';
import type { ChangeFeed } from '../db/notify.js';
import type { Pool } from '../db/pool.js';
import type { Logger } from '../log.js';
import { Snapshot } from '../cache/snapshot.js';
import { clients } from '../store/clients.js';
import { recordSamlMetadataOutcome, type SamlMetadataOutcome } from '../store/saml-metadata-status.js';
import type { Client } from '../types.js';
import { childElements, readSamlXml, SAML_NS, SamlRefusal } from './xml.js';
import { BINDING_POST, BINDING_REDIRECT, BINDING_SOAP } from './names.js';
import { invalid, metadataSummary, REFUSED_STANDS_SECONDS, unreachable } from './metadata-status.js';

/** An AssertionConsumerService of the HTTP-POST binding, the one binding the box answers with. */
export interface ConsumerService {
  url: string;
  index: number | undefined;
  isDefault: boolean;
}

/** A service provider as its metadata describes it. */
export interface SpMetadata {
  entityId: string;
  /** HTTP-POST AssertionConsumerServices, in the document's order. */
  consumers: ConsumerService[];
  /** PEM certificates the SP signs with (KeyDescriptor use="signing" or without use). */
  signingCertificates: string[];
  /** PEM certificates the box may encrypt to (use="encryption" or without use). */
  encryptionCertificates: string[];
  /** The SP says it signs every AuthnRequest (AuthnRequestsSigned="true"): an unsigned one is refused. */
  authnRequestsSigned: boolean;
  /** HTTP-Redirect SingleLogoutService locations. */
  logoutUrls: string[];
  /** SOAP SingleLogoutService locations: where the box tells the app of a close (./logout-notices.ts). */
  soapLogoutUrls: string[];
}

/** A SAML app: its client and its SP. */
export interface ServiceProvider extends SpMetadata {
  client: Client;
}

const attr = (el: Element, name: string): string | undefined => (el.hasAttribute(name) ? el.getAttribute(name)! : undefined);

/** The PEM of a ds:X509Certificate's base64, when it is a certificate node:crypto can read. */
function certificatePem(base64: string): string {
  const body = base64.replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(body)) throw new SamlRefusal('a KeyDescriptor holds a certificate that is not base64');
  const pem = `-----BEGIN CERTIFICATE-----\n${body.replace(/(.{64})/g, '$1\n').replace(/\n$/, '')}\n-----END CERTIFICATE-----\n`;
  try {
    new X509Certificate(pem);
  } catch {
    throw new SamlRefusal('a KeyDescriptor holds something that is not an X.509 certificate');
  }
  return pem;
}

/** The certificates of an SPSSODescriptor's KeyDescriptors of `use` (a KeyDescriptor without use serves both). */
function certificatesOf(sp: Element, use: 'signing' | 'encryption'): string[] {
  const pems: string[] = [];
  for (const descriptor of childElements(sp, SAML_NS.metadata, 'KeyDescriptor')) {
    const said = attr(descriptor, 'use');
    if (said !== undefined && said !== use) continue;
    for (const info of childElements(descriptor, SAML_NS.dsig, 'KeyInfo'))
      for (const data of childElements(info, SAML_NS.dsig, 'X509Data'))
        for (const cert of childElements(data, SAML_NS.dsig, 'X509Certificate')) pems.push(certificatePem(cert.textContent ?? ''));
  }
  return pems;
}

/** An absolute http(s) URL with no fragment, as a place the box posts people to must be. */
function consumerUrl(location: string | undefined): string {
  let url: URL;
  try {
    url = new URL(location ?? '');
  } catch {
    throw new SamlRefusal('an AssertionConsumerService Location is not an absolute URL');
  }
  if ((url.protocol !== 'https:' && url.protocol !== 'http:') || url.hash)
    throw new SamlRefusal('an AssertionConsumerService Location must be an http(s) URL without a fragment');
  return location!;
}

/** The locations of an SPSSODescriptor's SingleLogoutServices of `binding`. */
const logoutServices = (sp: Element, binding: string): string[] =>
  childElements(sp, SAML_NS.metadata, 'SingleLogoutService')
    .filter((slo) => attr(slo, 'Binding') === binding)
    .map((slo) => attr(slo, 'Location'))
    .filter((l): l is string => !!l);

/**
 * The service provider `xml` describes: one md:EntityDescriptor with one SPSSODescriptor of SAML
 * 2.0, at least one HTTP-POST AssertionConsumerService. Throws SamlRefusal with what is wrong.
 */
export async function readSpMetadata(xml: string): Promise<SpMetadata> {
  const doc = await readSamlXml(xml, 'metadata');
  const root = doc.documentElement;
  if (!root || root.namespaceURI !== SAML_NS.metadata || root.localName !== 'EntityDescriptor')
    throw new SamlRefusal('the metadata is not one md:EntityDescriptor (an EntitiesDescriptor names several apps: give this one its own)');
  const entityId = attr(root, 'entityID');
  if (!entityId) throw new SamlRefusal('the EntityDescriptor has no entityID');
  const sps = childElements(root, SAML_NS.metadata, 'SPSSODescriptor').filter((sp) =>
    (attr(sp, 'protocolSupportEnumeration') ?? '').split(/\s+/).includes(SAML_NS.protocol),
  );
  if (sps.length !== 1) throw new SamlRefusal('the metadata must hold exactly one SPSSODescriptor of SAML 2.0');
  const sp = sps[0]!;
  const consumers = childElements(sp, SAML_NS.metadata, 'AssertionConsumerService')
    .filter((acs) => attr(acs, 'Binding') === BINDING_POST)
    .map((acs) => {
      const index = attr(acs, 'index');
      return {
        url: consumerUrl(attr(acs, 'Location')),
        index: index === undefined ? undefined : Number(index),
        isDefault: attr(acs, 'isDefault') === 'true',
      };
    });
  if (!consumers.length)
    throw new SamlRefusal('the SP has no AssertionConsumerService of the HTTP-POST binding, the one the box answers with');
  return {
    entityId,
    consumers,
    signingCertificates: certificatesOf(sp, 'signing'),
    encryptionCertificates: certificatesOf(sp, 'encryption'),
    authnRequestsSigned: attr(sp, 'AuthnRequestsSigned') === 'true',
    logoutUrls: logoutServices(sp, BINDING_REDIRECT),
    soapLogoutUrls: logoutServices(sp, BINDING_SOAP),
  };
}

/**
 * Why a Client's saml section cannot be (its inline metadata does not read as an SP's), as a
 * sentence for the writer; undefined: it can. Metadata by URL is read when used (the box fetches it).
 */
export async function samlMetadataProblem(client: Pick<Client, 'saml'>): Promise<string | undefined> {
  const xml = client.saml?.metadata.xml;
  if (xml === undefined) return undefined;
  try {
    const sp = await readSpMetadata(xml);
    if (client.saml?.encryptAssertions && !sp.encryptionCertificates.length)
      return 'encryptAssertions needs a certificate to encrypt to: the metadata has no KeyDescriptor for encryption';
    return undefined;
  } catch (err) {
    if (err instanceof SamlRefusal) return `the SP metadata (saml.metadata.xml) cannot be read: ${err.reason}`;
    throw err;
  }
}

/** What fetches an SP's metadata by URL (api/document-fetch.ts under the box's rules), with how long it stands. */
export type FetchMetadata = (url: string) => Promise<{ xml: string; seconds: number }>;

interface Needs {
  pool: Pool;
  feed: ChangeFeed;
  log: Logger;
}

/** How long an app's metadata that could not be had or read is not tried again. */
const FAILURE_SECONDS = 30;

/** Why an SP could not be had: shown on the error page, to whoever sent the request: without the address a name resolved to, or a client id (the log names the client). */
export class SpUnavailable extends Error {}

/**
 * The box's SAML apps by entity ID. The clients with a saml section are read from the table (a
 * change anywhere reads them again); their metadata is read once per document (inline) or per
 * fetch (by URL, again once its caching time ran out).
 */
export class ServiceProviders {
  private readonly samlClients: Snapshot<Client[]>;
  private readonly read = new Map<string, { until: number; sp: Promise<SpMetadata> }>();

  constructor(
    private readonly svc: Needs,
    private readonly fetchMetadata: FetchMetadata,
  ) {
    this.samlClients = new Snapshot(svc.feed, ['clients'], () => clients.withSaml(svc.pool));
  }

  /** The SP of `client` (a SAML app); throws SpUnavailable when its metadata cannot be had or read. */
  async of(client: Client, now = Date.now()): Promise<ServiceProvider> {
    const saml = client.saml!;
    // By the document's digest: a key holding the document itself would keep up to a MiB per app in the map's keys.
    const xmlDigest = saml.metadata.xml === undefined ? null : createHash('sha256').update(saml.metadata.xml).digest('base64url');
    const key = JSON.stringify([client.id, xmlDigest, saml.metadata.url ?? null]);
    let held = this.read.get(key);
    if (!held || held.until <= now) {
      held = { until: Number.POSITIVE_INFINITY, sp: this.readMetadata(client, (seconds) => (held!.until = now + seconds * 1000)) };
      if (this.read.size >= 1000) this.read.delete(this.read.keys().next().value!);
      this.read.set(key, held);
      // A failure is kept a little while only: long enough that one app's metadata out of reach does not
      // hold every other app's sign-in for a fetch's timeout (byEntityId reads them all), short enough to be fixed.
      const failed = held;
      held.sp.catch(() => (failed.until = now + FAILURE_SECONDS * 1000));
    }
    return { ...(await held.sp), client };
  }

  /**
   * Fetches and reads the metadata of `client` (an app with a URL) afresh, whatever this process
   * holds, and records the outcome (./metadata-status.ts).
   */
  async lookAgain(client: Client, now = Date.now()): Promise<void> {
    for (const key of this.read.keys()) if ((JSON.parse(key) as unknown[])[0] === client.id) this.read.delete(key);
    try {
      await this.of(client, now);
    } catch (err) {
      if (!(err instanceof SpUnavailable)) throw err;
    }
  }

  private async readMetadata(client: Client, standsFor: (seconds: number) => void): Promise<SpMetadata> {
    const { xml, url } = client.saml!.metadata;
    if (xml !== undefined) {
      try {
        return await readSpMetadata(xml);
      } catch (err) {
        if (!(err instanceof SamlRefusal)) throw err;
        this.svc.log.warn({ event: 'saml_metadata_refused', client: client.id, reason: err.reason }, 'SAML SP metadata refused');
        throw new SpUnavailable(`the metadata of the app cannot be read: ${err.reason}`, { cause: err });
      }
    }
    let fetched: { xml: string; seconds: number };
    try {
      fetched = await this.fetchMetadata(url!);
    } catch (err) {
      this.svc.log.warn({ event: 'saml_metadata_refused', client: client.id, err }, 'SAML SP metadata could not be fetched');
      await this.recordOutcome(client, url!, unreachable(err), REFUSED_STANDS_SECONDS);
      throw new SpUnavailable('the metadata of the app could not be fetched', { cause: err });
    }
    try {
      const sp = await readSpMetadata(fetched.xml);
      standsFor(fetched.seconds);
      await this.recordOutcome(client, url!, { outcome: 'read', summary: metadataSummary(sp) }, fetched.seconds);
      return sp;
    } catch (err) {
      if (!(err instanceof SamlRefusal)) throw err;
      this.svc.log.warn({ event: 'saml_metadata_refused', client: client.id, reason: err.reason }, 'SAML SP metadata refused');
      await this.recordOutcome(client, url!, invalid(err.reason), REFUSED_STANDS_SECONDS);
      throw new SpUnavailable(`the metadata of the app cannot be read: ${err.reason}`, { cause: err });
    }
  }

  /** Keeps what a fetch came to for the app's status; a failure to keep it is logged, and costs the sign-in nothing. */
  private async recordOutcome(client: Client, url: string, outcome: SamlMetadataOutcome, seconds: number): Promise<void> {
    await recordSamlMetadataOutcome(this.svc.pool, client.id, url, outcome, seconds).catch((err: unknown) =>
      this.svc.log.warn({ client: client.id, err }, 'the outcome of a SAML metadata fetch could not be recorded'),
    );
  }

  /**
   * The SAML app whose entity ID is `entityId`; undefined when none is. Two apps naming one entity
   * ID sign nobody in (each could otherwise be given the other's assertions): SpUnavailable.
   */
  async byEntityId(entityId: string, now = Date.now()): Promise<ServiceProvider | undefined> {
    const read = await Promise.all(
      (await this.samlClients.get()).map((client) =>
        this.of(client, now).catch((err: unknown) => {
          // One app's metadata out of reach does not stop the others.
          if (err instanceof SpUnavailable) return undefined;
          throw err;
        }),
      ),
    );
    const found = read.filter((sp): sp is ServiceProvider => sp?.entityId === entityId);
    if (found.length > 1) {
      // Whoever sent the request may be anyone: the page names no client, the box's log names them for its keepers.
      const apps = found.map((sp) => sp.client.id);
      this.svc.log.warn({ event: 'saml_entity_id_shared', clients: apps }, `SAML apps ${apps.join(' and ')} name one entity ID`);
      throw new SpUnavailable('more than one app of this box names this entity ID, so none is signed in to until each has its own');
    }
    return found[0];
  }
}
