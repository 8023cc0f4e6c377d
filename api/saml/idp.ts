// The box as a SAML 2.0 identity provider (SAML 2.0 Core §3.4, Profiles §4.1 Web Browser SSO):
// an SP's AuthnRequest read and checked (readSsoRequest), what to do for it (decideSso, pure, the
// clock given), and the Response that answers it (samlResponse). The door
// (api/http/routes/saml.ts) gathers the facts and carries the decision out; it decides nothing.
//
// What an AuthnRequest must be before anyone is sent anywhere (each a refusal on the box's own
// page, never a redirect, since until all hold the box knows no place it may send the person):
// - its Issuer is the entity ID of one SAML app (Client.saml) of the box;
// - when it is signed (HTTP-Redirect: Signature and SigAlg over the raw query, Bindings §3.4.4.1;
//   HTTP-POST: an enveloped signature), the signature is good with a certificate of that SP's
//   metadata, and one is required when the metadata says AuthnRequestsSigned;
// - its AssertionConsumerServiceURL is one of the SP's metadata to the letter (Profiles §4.1.4.1:
//   "the identity provider MUST [...] verify that the location is acceptable"), or its index names
//   one; without either, the SP's default one;
// - its Destination, when present, is this box's SingleSignOnService; its IssueInstant is within
//   the skew of now, so that a request seen once cannot be replayed for ever; and within it, its ID
//   is spent once per app in the box's replay ledger (spendSsoRequest), so it cannot be replayed at all.
import { createHash } from 'node:crypto';
import type { Acr } from '../credentials/acr.js';
import type { ProofLedger } from '../store/dpop-proofs.js';
import { asksForFreshSignIn, mustSignIn, mustStepUp, type SignedIn } from '../credentials/sign-in.js';
import { decodePostMessage, decodeRedirectMessage } from './bindings.js';
import { encryptAssertion } from './encryption.js';
import { idpEndpoints } from './idp-metadata.js';
import { NAMEID_FORMATS, newSamlId, xmlEscaped, type NameIdFormat } from './names.js';
import type { ServiceProvider } from './service-providers.js';
import { signSamlXml, type SamlSigningKey } from './sign.js';
import { verifiedSignedMessage, verifyRedirectSignature, textOf } from './verify.js';
import { childElements, readSamlXml, SAML_NS, SamlRefusal } from './xml.js';

/** How far an AuthnRequest's IssueInstant may be from the box's clock (either way). */
export const REQUEST_SKEW_MS = 5 * 60_000;
/** How long an assertion may be presented: NotOnOrAfter (Subject and Conditions) is this after issue. */
export const ASSERTION_SECONDS = 300;

const STATUS = {
  success: 'urn:oasis:names:tc:SAML:2.0:status:Success',
  responder: 'urn:oasis:names:tc:SAML:2.0:status:Responder',
  requester: 'urn:oasis:names:tc:SAML:2.0:status:Requester',
  noPassive: 'urn:oasis:names:tc:SAML:2.0:status:NoPassive',
  requestDenied: 'urn:oasis:names:tc:SAML:2.0:status:RequestDenied',
  noAuthnContext: 'urn:oasis:names:tc:SAML:2.0:status:NoAuthnContext',
  invalidNameIdPolicy: 'urn:oasis:names:tc:SAML:2.0:status:InvalidNameIDPolicy',
} as const;

/**
 * The box's sign-in classes (api/credentials/acr.ts) as SAML names them: what an
 * AuthnContextClassRef says of a sign-in, and what a RequestedAuthnContext may ask for. The box's
 * own names are understood as well.
 */
const AUTHN_CONTEXTS: Record<Acr, string> = {
  'urn:boxauth:acr:password': 'urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport',
  'urn:boxauth:acr:mfa': 'https://refeds.org/profile/mfa',
  phr: 'phr',
};
const ACR_OF_CONTEXT = new Map<string, Acr>([
  ...Object.entries(AUTHN_CONTEXTS).map(([acr, ref]) => [ref, acr as Acr] as const),
  ...Object.keys(AUTHN_CONTEXTS).map((acr) => [acr, acr as Acr] as const),
  ['urn:oasis:names:tc:SAML:2.0:ac:classes:Password', 'urn:boxauth:acr:password'],
  ['urn:oasis:names:tc:SAML:2.0:ac:classes:unspecified', 'urn:boxauth:acr:password'],
]);

/** The AuthnContextClassRef of a sign-in of class `acr`. */
export const authnContextOf = (acr: Acr): string => AUTHN_CONTEXTS[acr];

/**
 * What an SSO request asks, as the box keeps it through the sign-in: all it needs to answer, and
 * nothing the SP could change on the way back (the door keeps it under a MAC: ../http/routes/saml.ts).
 */
export interface SsoRequest {
  clientId: string;
  /** The AuthnRequest's ID (InResponseTo); absent for an IdP-initiated sign-in. */
  requestId?: string;
  /** The AssertionConsumerService the Response goes to, one of the SP's metadata. */
  acsUrl: string;
  relayState?: string;
  /** ForceAuthn: a sign-in made for this request. */
  forceAuthn: boolean;
  /** IsPassive: no page may be shown; a sign-in needed is a NoPassive status back. */
  isPassive: boolean;
  /** The weakest class of sign-in the RequestedAuthnContext accepts, when it names one the box knows. */
  acr?: Acr;
  /** RequestedAuthnContext asked for classes the box has none of (Comparison exact). */
  unmetContext?: boolean;
  /** NameIDPolicy asked for a format other than the app's (or unspecified): InvalidNameIDPolicy (Core §3.4.1.1). */
  unmetNameIdPolicy?: boolean;
}

/** An SSO request as it came (the door's translation of either binding). */
export interface SsoMessage {
  binding: 'redirect' | 'post';
  /** SAMLRequest as sent: base64 (of raw DEFLATE for HTTP-Redirect). */
  samlRequest: string;
  relayState: string | undefined;
  /** HTTP-Redirect: the query string as sent, what a Signature covers. */
  rawQuery?: string;
  /** HTTP-Redirect: the query carries a Signature. */
  redirectSigned?: boolean;
}

/** The SAML apps the box knows (./service-providers.ts ServiceProviders). */
export interface KnownProviders {
  byEntityId(entityId: string, now?: number): Promise<ServiceProvider | undefined>;
}

/** RelayState is opaque to the box; Bindings §3.4.3 and §3.5.3 bound it to 80 bytes. */
const MAX_RELAY_STATE = 80;

const attr = (el: Element, name: string): string | undefined => (el.hasAttribute(name) ? el.getAttribute(name)! : undefined);

/** The consumer service of `sp` the request names (URL to the letter, or index), else its default. */
function consumerOf(sp: ServiceProvider, url: string | undefined, index: string | undefined): string {
  if (url !== undefined) {
    if (index !== undefined) throw new SamlRefusal('the AuthnRequest names an AssertionConsumerServiceURL and an index: one of them');
    if (!sp.consumers.some((c) => c.url === url))
      throw new SamlRefusal("the AuthnRequest's AssertionConsumerServiceURL is not one of the app's metadata");
    return url;
  }
  if (index !== undefined) {
    const named = sp.consumers.find((c) => c.index !== undefined && String(c.index) === index);
    if (!named) throw new SamlRefusal("the AuthnRequest's AssertionConsumerServiceIndex is not one of the app's metadata");
    return named.url;
  }
  return (sp.consumers.find((c) => c.isDefault) ?? sp.consumers[0]!).url;
}

/** RequestedAuthnContext (Core §3.3.2.2.1): the weakest class the box knows among those asked (any one would do). */
function contextAsked(request: Element): Pick<SsoRequest, 'acr' | 'unmetContext'> {
  const requested = childElements(request, SAML_NS.protocol, 'RequestedAuthnContext')[0];
  if (!requested) return {};
  const comparison = attr(requested, 'Comparison') ?? 'exact';
  const refs = childElements(requested, SAML_NS.assertion, 'AuthnContextClassRef').map((el) => textOf(el));
  const known = refs.map((ref) => ACR_OF_CONTEXT.get(ref)).filter((acr): acr is Acr => acr !== undefined);
  const order: Acr[] = ['urn:boxauth:acr:password', 'urn:boxauth:acr:mfa', 'phr'];
  const weakest = known.sort((a, b) => order.indexOf(a) - order.indexOf(b))[0];
  if (weakest === undefined) return refs.length && (comparison === 'exact' || comparison === 'better') ? { unmetContext: true } : {};
  // `better` asks for more than the class named: the next one up, if the box has it.
  if (comparison === 'better') {
    const next = order[order.indexOf(weakest) + 1];
    return next ? { acr: next } : { unmetContext: true };
  }
  // `minimum` and `exact` are both met by a sign-in of at least this class (the box never weakens one); `maximum` asks nothing more.
  return comparison === 'maximum' ? {} : { acr: weakest };
}

/**
 * The SSO request of an AuthnRequest sent by `message`'s binding: read (schema first: ./xml.ts),
 * its SP found by Issuer, its signature checked, its consumer service matched, its time checked.
 * Throws SamlRefusal (the door shows it on a page: the request names no place the box trusts yet).
 */
export async function readSsoRequest(message: SsoMessage, providers: KnownProviders, issuer: string, now: number): Promise<SsoRequest> {
  if (message.relayState !== undefined && Buffer.byteLength(message.relayState) > MAX_RELAY_STATE)
    throw new SamlRefusal('the RelayState is longer than 80 bytes');
  const xml = message.binding === 'redirect' ? decodeRedirectMessage(message.samlRequest) : decodePostMessage(message.samlRequest);
  const doc = await readSamlXml(xml, 'protocol');
  let request: Element | null = doc.documentElement;
  if (!request || request.namespaceURI !== SAML_NS.protocol || request.localName !== 'AuthnRequest')
    throw new SamlRefusal('the SAMLRequest is not an AuthnRequest');
  const issuerEl = childElements(request, SAML_NS.assertion, 'Issuer')[0];
  if (!issuerEl) throw new SamlRefusal('the AuthnRequest names no Issuer');
  const sp = await providers.byEntityId(textOf(issuerEl), now);
  if (!sp) throw new SamlRefusal('the AuthnRequest comes from an app this box does not know (its Issuer is no SAML app of the box)');
  const envelopedSignature = childElements(request, SAML_NS.dsig, 'Signature').length > 0;
  if (message.binding === 'redirect') {
    // Bindings §3.4.4.1: a signature of the Redirect binding is over the query; one inside the XML is removed by the sender.
    if (envelopedSignature)
      throw new SamlRefusal('an AuthnRequest sent by HTTP-Redirect carries its signature in the query, not in the XML');
    if (message.redirectSigned) {
      if (!verifyRedirectSignature(message.rawQuery ?? '', sp.signingCertificates))
        throw new SamlRefusal("the AuthnRequest's signature is not good with the app's certificates");
    } else if (sp.authnRequestsSigned)
      throw new SamlRefusal('the app signs its AuthnRequests (its metadata says so), and this one is unsigned');
  } else if (envelopedSignature) {
    // Only what the signature covers is read from here on (./verify.ts), never the document around it.
    request = verifiedSignedMessage(doc, sp.signingCertificates);
  } else if (sp.authnRequestsSigned)
    throw new SamlRefusal('the app signs its AuthnRequests (its metadata says so), and this one is unsigned');

  const at = idpEndpoints(issuer);
  const destination = attr(request, 'Destination');
  if (destination !== undefined && destination !== at.sso)
    throw new SamlRefusal("the AuthnRequest's Destination is not this box's SSO URL");
  if (attr(request, 'Version') !== '2.0') throw new SamlRefusal('the AuthnRequest is not of SAML 2.0');
  const issued = Date.parse(attr(request, 'IssueInstant') ?? '');
  if (!Number.isFinite(issued) || Math.abs(now - issued) > REQUEST_SKEW_MS)
    throw new SamlRefusal("the AuthnRequest's IssueInstant is not within five minutes of now");
  const binding = attr(request, 'ProtocolBinding');
  if (binding !== undefined && binding !== 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST')
    throw new SamlRefusal('the AuthnRequest asks for a ProtocolBinding other than HTTP-POST, the one the box answers with');
  const policy = childElements(request, SAML_NS.protocol, 'NameIDPolicy')[0];
  const format = policy && attr(policy, 'Format');
  // The request names a place the box may answer at from here on: a format the app is not given is a status back, not a page.
  const allowed: string[] = [NAMEID_FORMATS[sp.client.saml?.nameIdFormat ?? 'persistent'], NAMEID_FORMATS.unspecified];
  const acsUrl = consumerOf(sp, attr(request, 'AssertionConsumerServiceURL'), attr(request, 'AssertionConsumerServiceIndex'));
  return {
    clientId: sp.client.id,
    requestId: attr(request, 'ID')!,
    acsUrl,
    ...(message.relayState !== undefined ? { relayState: message.relayState } : {}),
    forceAuthn: attr(request, 'ForceAuthn') === 'true',
    isPassive: attr(request, 'IsPassive') === 'true',
    ...contextAsked(request),
    ...(format !== undefined && !allowed.includes(format) ? { unmetNameIdPolicy: true } : {}),
  };
}

/** Where AuthnRequests' IDs are spent (the box's replay ledger). */
export type SsoRequestLedger = Pick<ProofLedger, 'firstSeen'>;

/**
 * Spends the ID of a checked AuthnRequest in the box's replay ledger (api/store/dpop-proofs.ts, as
 * client assertions spend their jti), once per app: the same request replayed, in this process or
 * another, is refused (SamlRefusal) while its IssueInstant could still be taken (REQUEST_SKEW_MS
 * either side of now, so remembered for twice that). An IdP-initiated sign-in has no ID to spend.
 */
export async function spendSsoRequest(ledger: SsoRequestLedger, request: SsoRequest, now: number): Promise<void> {
  if (request.requestId === undefined) return;
  // JSON-quoted, not joined: an app's id and an ID may hold any separator (see api/oauth/client-assertion.ts).
  const digest = createHash('sha256')
    .update(`saml_authn_request.${JSON.stringify([request.clientId, request.requestId])}`)
    .digest();
  if (!(await ledger.firstSeen({ digest, expiresAt: new Date(now + 2 * REQUEST_SKEW_MS) })))
    throw new SamlRefusal('the AuthnRequest was used already (its ID was seen before)');
}

/** An IdP-initiated sign-in (Profiles §4.1.5, an unsolicited Response) to `sp`, when its Client allows them. */
export function unsolicitedRequest(sp: ServiceProvider | undefined, relayState: string | undefined): SsoRequest {
  if (!sp) throw new SamlRefusal('no SAML app of this box has that entity ID');
  if (sp.client.saml?.idpInitiated !== true)
    throw new SamlRefusal('this app takes no sign-in it did not ask for (its Client does not set saml.idpInitiated)');
  if (relayState !== undefined && Buffer.byteLength(relayState) > MAX_RELAY_STATE)
    throw new SamlRefusal('the RelayState is longer than 80 bytes');
  return {
    clientId: sp.client.id,
    acsUrl: (sp.consumers.find((c) => c.isDefault) ?? sp.consumers[0]!).url,
    ...(relayState !== undefined ? { relayState } : {}),
    forceAuthn: false,
    isPassive: false,
  };
}

/** What the box knows when it decides what an SSO request needs next. */
export interface SsoFacts {
  request: SsoRequest;
  signedIn: SignedIn | undefined;
  /** The browser signed in after the request was first seen (ForceAuthn waits for it). */
  signedInSinceRequest: boolean;
  /** The ways of signing in the client accepts (Client.identityProviders); undefined: every way. */
  accepted: readonly string[] | undefined;
  /** The class of sign-in wanted (the request's, the client's minimum_acr, the person's groups); undefined: any. */
  acrWanted: Acr | undefined;
  /** The client's AccessPolicies admit the person (asked only once someone is signed in). */
  admitted: boolean | undefined;
  /** The person allowed the app before, or it needs no consent (first_party). */
  consented: boolean | undefined;
  /** The consent form's answer, when the request comes back from it. */
  answer?: 'allow' | 'deny';
  now: number;
}

export type SsoNext =
  | { next: 'sign-in' }
  | { next: 'step-up'; acr: Acr }
  | { next: 'consent' }
  | { next: 'signed-out' }
  /** A Response without an assertion, with this status (Core §3.2.2.2), to the consumer service. */
  | { next: 'status'; status: string; message: string }
  /** The person may not use this app: a page of the box, and no assertion. */
  | { next: 'denied' }
  /** An assertion; `remember`: record the consent first. */
  | { next: 'assertion'; remember: boolean };

/** What an SSO request needs next: the whole decision, from the facts. */
export function decideSso(f: SsoFacts): SsoNext {
  const { request } = f;
  if (f.answer !== undefined) {
    if (!f.signedIn) return { next: 'signed-out' };
    if (f.answer === 'deny') return { next: 'status', status: STATUS.requestDenied, message: 'the person did not allow the app' };
  }
  if (request.unmetNameIdPolicy)
    return { next: 'status', status: STATUS.invalidNameIdPolicy, message: 'the app asked for a NameID format its Client does not give' };
  if (request.unmetContext)
    return { next: 'status', status: STATUS.noAuthnContext, message: 'the box has no sign-in of the class the app asked for' };
  const asked = { prompt: new Set(request.forceAuthn ? ['login'] : []), maxAge: undefined, hintedUser: undefined };
  if (mustSignIn({ asked, signedIn: f.signedIn, signedInSinceRequest: f.signedInSinceRequest, accepted: f.accepted, now: f.now })) {
    // Core §3.4.1: IsPassive - "the identity provider MUST NOT visibly take control of the user interface".
    if (request.isPassive) return { next: 'status', status: STATUS.noPassive, message: 'the person must sign in' };
    return { next: 'sign-in' };
  }
  if (f.acrWanted !== undefined && mustStepUp(f.signedIn!, f.acrWanted)) {
    if (request.isPassive) return { next: 'status', status: STATUS.noPassive, message: 'the person must sign in with a stronger factor' };
    return { next: 'step-up', acr: f.acrWanted };
  }
  // A person the app's policies do not admit is given nothing about them: no assertion, no status naming them.
  if (!f.admitted) return { next: 'denied' };
  if (f.answer === 'allow') return { next: 'assertion', remember: true };
  if (f.consented) return { next: 'assertion', remember: false };
  if (request.isPassive) return { next: 'status', status: STATUS.requestDenied, message: 'the person has not allowed the app' };
  return { next: 'consent' };
}

/** Whether ForceAuthn asks for a sign-in made for the request (the door then remembers the sign-in it saw). */
export const forcesSignIn = (request: SsoRequest): boolean =>
  asksForFreshSignIn({ prompt: new Set(request.forceAuthn ? ['login'] : []), maxAge: undefined, hintedUser: undefined });

/** What an assertion says of the person and their sign-in. */
export interface AssertionFacts {
  nameId: { format: NameIdFormat; value: string };
  /** The browser session (its sid): what a LogoutRequest names. */
  sessionIndex: string;
  authnInstant: Date;
  acr: Acr;
  /** Attribute name → values (the client's shaped claims, email, groups). */
  attributes: Record<string, string[]>;
}

const iso = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

/** The values of a shaped claim as SAML attribute values: strings as they are, numbers and booleans as text, anything else as JSON. */
export function attributeValues(value: unknown): string[] {
  const one = (v: unknown): string =>
    typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' ? String(v) : JSON.stringify(v);
  return Array.isArray(value) ? value.map(one) : [one(value)];
}

function statusXml(status: string, message?: string): string {
  // Second-level codes under the top-level one they belong to (Core §3.2.2.2): PartialLogout is a success that did not reach everyone.
  const top =
    status === STATUS.success || status === STATUS.requester
      ? status
      : status === 'urn:oasis:names:tc:SAML:2.0:status:PartialLogout'
        ? STATUS.success
        : STATUS.responder;
  const inner = top === status ? '' : `<samlp:StatusCode Value="${status}"/>`;
  return (
    `<samlp:Status><samlp:StatusCode Value="${top}">${inner}</samlp:StatusCode>` +
    (message ? `<samlp:StatusMessage>${xmlEscaped(message)}</samlp:StatusMessage>` : '') +
    '</samlp:Status>'
  );
}

function responseXml(issuer: string, request: SsoRequest, now: number, status: string, inner: string, message?: string): string {
  const inResponseTo = request.requestId !== undefined ? ` InResponseTo="${xmlEscaped(request.requestId)}"` : '';
  return (
    `<samlp:Response xmlns:samlp="${SAML_NS.protocol}" xmlns:saml="${SAML_NS.assertion}" ID="${newSamlId()}" Version="2.0" ` +
    `IssueInstant="${iso(now)}" Destination="${xmlEscaped(request.acsUrl)}"${inResponseTo}>` +
    `<saml:Issuer>${xmlEscaped(idpEndpoints(issuer).entityId)}</saml:Issuer>` +
    statusXml(status, message) +
    inner +
    '</samlp:Response>'
  );
}

function assertionXml(issuer: string, sp: ServiceProvider, request: SsoRequest, facts: AssertionFacts, now: number): string {
  const until = iso(now + ASSERTION_SECONDS * 1000);
  const inResponseTo = request.requestId !== undefined ? ` InResponseTo="${xmlEscaped(request.requestId)}"` : '';
  const attributes = Object.entries(facts.attributes).filter(([, values]) => values.length);
  return (
    `<saml:Assertion xmlns:saml="${SAML_NS.assertion}" xmlns:xs="http://www.w3.org/2001/XMLSchema" ` +
    `xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" ID="${newSamlId()}" Version="2.0" IssueInstant="${iso(now)}">` +
    `<saml:Issuer>${xmlEscaped(idpEndpoints(issuer).entityId)}</saml:Issuer>` +
    `<saml:Subject><saml:NameID Format="${NAMEID_FORMATS[facts.nameId.format]}">${xmlEscaped(facts.nameId.value)}</saml:NameID>` +
    `<saml:SubjectConfirmation Method="urn:oasis:names:tc:SAML:2.0:cm:bearer">` +
    `<saml:SubjectConfirmationData${inResponseTo} NotOnOrAfter="${until}" Recipient="${xmlEscaped(request.acsUrl)}"/>` +
    '</saml:SubjectConfirmation></saml:Subject>' +
    `<saml:Conditions NotBefore="${iso(now)}" NotOnOrAfter="${until}">` +
    `<saml:AudienceRestriction><saml:Audience>${xmlEscaped(sp.entityId)}</saml:Audience></saml:AudienceRestriction></saml:Conditions>` +
    `<saml:AuthnStatement AuthnInstant="${iso(facts.authnInstant.getTime())}" SessionIndex="${xmlEscaped(facts.sessionIndex)}">` +
    `<saml:AuthnContext><saml:AuthnContextClassRef>${xmlEscaped(authnContextOf(facts.acr))}</saml:AuthnContextClassRef></saml:AuthnContext>` +
    '</saml:AuthnStatement>' +
    (attributes.length
      ? '<saml:AttributeStatement>' +
        attributes
          .map(
            ([name, values]) =>
              `<saml:Attribute Name="${xmlEscaped(name)}" NameFormat="urn:oasis:names:tc:SAML:2.0:attrname-format:basic">` +
              values.map((v) => `<saml:AttributeValue xsi:type="xs:string">${xmlEscaped(v)}</saml:AttributeValue>`).join('') +
              '</saml:Attribute>',
          )
          .join('') +
        '</saml:AttributeStatement>'
      : '') +
    '</saml:Assertion>'
  );
}

/** `xml` without an XML declaration, to be put inside another document. */
const withoutDeclaration = (xml: string): string => xml.replace(/^<\?xml[^>]*\?>\s*/, '');

/**
 * The Response to `request` with an assertion of `facts`: the Assertion signed, then encrypted to
 * the SP when its Client asks (saml.encryptAssertions), then the Response signed around it.
 */
export async function samlResponse(
  issuer: string,
  sp: ServiceProvider,
  request: SsoRequest,
  facts: AssertionFacts,
  key: SamlSigningKey,
  now: number,
): Promise<string> {
  let assertion = withoutDeclaration(signSamlXml(assertionXml(issuer, sp, request, facts, now), 'Assertion', key));
  if (sp.client.saml?.encryptAssertions) {
    const to = sp.encryptionCertificates[0];
    if (!to) throw new SamlRefusal('the app asks for encrypted assertions, and its metadata has no certificate to encrypt to');
    assertion = withoutDeclaration(await encryptAssertion(assertion, to));
  }
  return signSamlXml(responseXml(issuer, request, now, STATUS.success, assertion), 'Response', key);
}

/** A Response without an assertion, of `status` (NoPassive, RequestDenied, NoAuthnContext), signed. */
export function samlStatusResponse(
  issuer: string,
  request: SsoRequest,
  status: string,
  message: string,
  key: SamlSigningKey,
  now: number,
): string {
  return signSamlXml(responseXml(issuer, request, now, status, '', message), 'Response', key);
}

/** A LogoutRequest of an SP (Profiles §4.4, HTTP-Redirect), checked: whom it signs out, and where the answer goes. */
export interface SloRequest {
  sp: ServiceProvider;
  requestId: string;
  /** The NameID it names, as the SP was given it. */
  nameId: string;
  /** The SessionIndexes it names (the box's browser session sids); none: every session of the person at this browser. */
  sessionIndexes: string[];
  relayState?: string;
  /** The SP's SingleLogoutService (HTTP-Redirect), where the LogoutResponse goes. */
  logoutUrl: string;
}

/**
 * A LogoutRequest sent by HTTP-Redirect: its SP by Issuer, its signature over the query (required:
 * Profiles §4.4.4.1, the requester "MUST authenticate itself" - an unsigned one would let any page
 * sign a person out), its Destination and time. Throws SamlRefusal.
 */
export async function readLogoutRequest(message: SsoMessage, providers: KnownProviders, issuer: string, now: number): Promise<SloRequest> {
  if (message.relayState !== undefined && Buffer.byteLength(message.relayState) > MAX_RELAY_STATE)
    throw new SamlRefusal('the RelayState is longer than 80 bytes');
  const doc = await readSamlXml(decodeRedirectMessage(message.samlRequest), 'protocol');
  const request = doc.documentElement;
  if (!request || request.namespaceURI !== SAML_NS.protocol || request.localName !== 'LogoutRequest')
    throw new SamlRefusal('the SAMLRequest is not a LogoutRequest');
  const issuerEl = childElements(request, SAML_NS.assertion, 'Issuer')[0];
  const sp = issuerEl && (await providers.byEntityId(textOf(issuerEl), now));
  if (!sp) throw new SamlRefusal('the LogoutRequest comes from an app this box does not know');
  if (!message.redirectSigned || !verifyRedirectSignature(message.rawQuery ?? '', sp.signingCertificates))
    throw new SamlRefusal("the LogoutRequest is not signed with the app's certificates");
  const destination = attr(request, 'Destination');
  if (destination !== undefined && destination !== idpEndpoints(issuer).slo)
    throw new SamlRefusal("the LogoutRequest's Destination is not this box's SLO URL");
  const issued = Date.parse(attr(request, 'IssueInstant') ?? '');
  if (!Number.isFinite(issued) || Math.abs(now - issued) > REQUEST_SKEW_MS)
    throw new SamlRefusal("the LogoutRequest's IssueInstant is not within five minutes of now");
  const until = attr(request, 'NotOnOrAfter');
  if (until !== undefined && !(Date.parse(until) > now)) throw new SamlRefusal('the LogoutRequest has expired (NotOnOrAfter)');
  const nameIdEl = childElements(request, SAML_NS.assertion, 'NameID')[0];
  if (!nameIdEl) throw new SamlRefusal('the LogoutRequest names nobody (no NameID)');
  const logoutUrl = sp.logoutUrls[0];
  if (!logoutUrl) throw new SamlRefusal('the app has no SingleLogoutService of the HTTP-Redirect binding in its metadata');
  return {
    sp,
    requestId: attr(request, 'ID')!,
    nameId: textOf(nameIdEl),
    sessionIndexes: childElements(request, SAML_NS.protocol, 'SessionIndex').map((el) => textOf(el)),
    ...(message.relayState !== undefined ? { relayState: message.relayState } : {}),
    logoutUrl,
  };
}

/**
 * The LogoutResponse to `slo` (Core §3.7.2): Success, or PartialLogout (second-level, under Success) when the
 * browser was signed in as someone else or another app was not signed out (./logout-chains.ts).
 */
export function logoutResponseXml(issuer: string, slo: Pick<SloRequest, 'requestId' | 'logoutUrl'>, partial: boolean, now: number): string {
  const status = partial ? 'urn:oasis:names:tc:SAML:2.0:status:PartialLogout' : STATUS.success;
  return (
    `<samlp:LogoutResponse xmlns:samlp="${SAML_NS.protocol}" xmlns:saml="${SAML_NS.assertion}" ID="${newSamlId()}" Version="2.0" ` +
    `IssueInstant="${iso(now)}" Destination="${xmlEscaped(slo.logoutUrl)}" InResponseTo="${xmlEscaped(slo.requestId)}">` +
    `<saml:Issuer>${xmlEscaped(idpEndpoints(issuer).entityId)}</saml:Issuer>` +
    statusXml(status) +
    '</samlp:LogoutResponse>'
  );
}
