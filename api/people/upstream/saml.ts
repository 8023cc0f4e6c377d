// A SAML 2.0 identity provider's Response, once its XML was read against the schema and its
// signature checked (api/saml/verify.ts verifiedResponse: the one Assertion a valid signature of
// the provider's covered): what the Web Browser SSO profile (SAML Profiles §4.1.4.2-3) requires of
// it before the box believes it, as one pure decision with the clock given. Then the person it
// names, as every provider's profile (./profile.ts).
//
// What is checked, each against what the box knows on its own, never against the document:
// - the Response's Status is Success;
// - the Response's Issuer (when it has one) and the Assertion's are the provider's entity ID;
// - the Response's Destination and a bearer SubjectConfirmation's Recipient are the box's ACS URL
//   for this provider (a Response meant for another service provider is not spent here);
// - the Response's InResponseTo and the confirmation's are the ID of the AuthnRequest this browser
//   sent (./saml-sp.ts: the request is bound to the browser as an OIDC state is), so neither an
//   unsolicited Response nor one that answered another request signs anyone in;
// - every AudienceRestriction names the box's SP entity ID for this provider;
// - Conditions' NotBefore/NotOnOrAfter and the confirmation's NotOnOrAfter hold now, give or take
//   CLOCK_SKEW_MS;
// - an AuthnStatement is there (the Assertion says the person signed in, not only who they are).
// The Assertion's ID is spent once (./saml-sp.ts, the replay ledger) until `acceptUntil`.
import { SAML_NS, SamlRefusal, childElements, onlyChild, textOf } from '../../saml/xml.js';
import type { VerifiedResponse } from '../../saml/verify.js';
import type { IdentityProvider } from '../../types.js';
import { emailFrom, UpstreamError, type UpstreamProfile } from './profile.js';
import { NAMEID_FORMATS } from '../../saml/names.js';

export type SamlSettings = NonNullable<IdentityProvider['saml']>;

/**
 * How far the provider's clock may be from the box's, either way. Two organisations' clocks: NTP
 * keeps each within a second, a virtual machine resumed from a pause can be a minute off. Two
 * minutes lets those through, and is small beside the lifetime of an Assertion (ADFS, Entra ID,
 * Okta and Keycloak give five minutes or more), so an Assertion taken from a log or a proxy is no
 * good for long past its provider's own limit. The ledger keeps an ID at least that long.
 */
export const CLOCK_SKEW_MS = 2 * 60 * 1000;

const SUCCESS = 'urn:oasis:names:tc:SAML:2.0:status:Success';
const BEARER = 'urn:oasis:names:tc:SAML:2.0:cm:bearer';
const TRANSIENT = 'urn:oasis:names:tc:SAML:2.0:nameid-format:transient';

/** What the box expects of a Response to it: who sends it, to where, for whom, answering which request. */
export interface SamlExpectations {
  idpEntityId: string;
  spEntityId: string;
  acsUrl: string;
  /** The ID of the AuthnRequest this browser sent. */
  requestId: string;
}

/** An Assertion the box accepts: whose it is and what it says. */
export interface AcceptedAssertion {
  id: string;
  nameId: string;
  nameIdFormat: string | undefined;
  /** Each attribute's values by its Name (an attribute named twice: its values together). */
  attributes: Map<string, string[]>;
  authnContext: string | undefined;
  /** When no check here could take this Assertion any more: the ledger keeps its ID until then. */
  acceptUntil: Date;
}

const invalid = (why: string): UpstreamError => new UpstreamError('invalid', why);

/** An xs:dateTime attribute, or undefined when absent; a value that is no time refuses the Response. */
function timeOf(el: Element, name: string): Date | undefined {
  if (!el.hasAttribute(name)) return undefined;
  const raw = el.getAttribute(name) ?? '';
  const at = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(raw) ? new Date(raw) : undefined;
  if (!at || Number.isNaN(at.getTime())) throw invalid(`${el.localName}'s ${name} is not a time`);
  return at;
}

const attributeOf = (el: Element, name: string): string | undefined => (el.hasAttribute(name) ? (el.getAttribute(name) ?? '') : undefined);

/** The Status of a Response, read before any signature is checked: only to tell a refusal from an attack, never to accept anything. */
export function statusOf(response: Element): string | undefined {
  const status = childElements(response, SAML_NS.protocol, 'Status')[0];
  const code = status && childElements(status, SAML_NS.protocol, 'StatusCode')[0];
  return code ? attributeOf(code, 'Value') : undefined;
}

/** The request a Response says it answers, to find it (then checked again against what it was, in acceptedAssertion). */
export const answeredRequest = (response: Element): string | undefined => attributeOf(response, 'InResponseTo');

/**
 * The Assertion of `verified` as the box takes it, or an UpstreamError: 'refused' when the
 * provider answered without success, 'invalid' when anything the profile requires does not hold.
 */
export function acceptedAssertion(verified: VerifiedResponse, expected: SamlExpectations, now: Date): AcceptedAssertion {
  try {
    return checkedAssertion(verified, expected, now);
  } catch (err) {
    // A value that is not text alone (a comment in a NameID), an element missing or doubled.
    if (err instanceof SamlRefusal) throw invalid(`the Assertion: ${err.reason}`);
    throw err;
  }
}

function checkedAssertion(verified: VerifiedResponse, expected: SamlExpectations, now: Date): AcceptedAssertion {
  const { response, assertion } = verified;
  const status = statusOf(response);
  if (status !== SUCCESS) throw new UpstreamError('refused', `the identity provider answered ${status ?? 'no status'}`);
  const responseIssuer = childElements(response, SAML_NS.assertion, 'Issuer')[0];
  if (responseIssuer && textOf(responseIssuer) !== expected.idpEntityId) throw invalid("the Response's Issuer is another entity");
  if (attributeOf(response, 'Destination') !== expected.acsUrl) throw invalid("the Response's Destination is not this provider's ACS URL");
  if (answeredRequest(response) !== expected.requestId) throw invalid('the Response answers another request');
  if (textOf(onlyChild(assertion, SAML_NS.assertion, 'Issuer')) !== expected.idpEntityId)
    throw invalid("the Assertion's Issuer is another entity");
  const id = attributeOf(assertion, 'ID');
  if (!id) throw invalid('the Assertion has no ID');

  const subject = onlyChild(assertion, SAML_NS.assertion, 'Subject');
  const nameIdElement = onlyChild(subject, SAML_NS.assertion, 'NameID');
  const nameId = textOf(nameIdElement);
  if (nameId === '') throw invalid('the NameID is empty');
  const confirmedUntil = bearerConfirmation(subject, expected, now);
  const conditionsUntil = conditionsHold(assertion, expected, now);
  const authn = childElements(assertion, SAML_NS.assertion, 'AuthnStatement');
  if (authn.length === 0) throw invalid('the Assertion has no AuthnStatement');
  const context = childElements(authn[0]!, SAML_NS.assertion, 'AuthnContext')[0];
  const classRef = context && childElements(context, SAML_NS.assertion, 'AuthnContextClassRef')[0];
  const until = conditionsUntil && conditionsUntil < confirmedUntil ? conditionsUntil : confirmedUntil;
  return {
    id,
    nameId,
    nameIdFormat: attributeOf(nameIdElement, 'Format'),
    attributes: attributesOf(assertion),
    authnContext: classRef ? textOf(classRef) : undefined,
    acceptUntil: new Date(until.getTime() + CLOCK_SKEW_MS),
  };
}

/**
 * Profiles §4.1.4.2: at least one bearer SubjectConfirmation whose data names the ACS URL as
 * Recipient, the request as InResponseTo, and a NotOnOrAfter not passed (and no NotBefore). Its
 * NotOnOrAfter is returned.
 */
function bearerConfirmation(subject: Element, expected: SamlExpectations, now: Date): Date {
  const problems: string[] = [];
  for (const confirmation of childElements(subject, SAML_NS.assertion, 'SubjectConfirmation')) {
    if (attributeOf(confirmation, 'Method') !== BEARER) continue;
    const data = childElements(confirmation, SAML_NS.assertion, 'SubjectConfirmationData')[0];
    if (!data) {
      problems.push('a bearer confirmation has no data');
      continue;
    }
    const notOnOrAfter = timeOf(data, 'NotOnOrAfter');
    if (attributeOf(data, 'Recipient') !== expected.acsUrl) problems.push("its Recipient is not this provider's ACS URL");
    else if (attributeOf(data, 'InResponseTo') !== expected.requestId) problems.push('it answers another request');
    else if (timeOf(data, 'NotBefore') !== undefined) problems.push('a bearer confirmation may have no NotBefore');
    else if (!notOnOrAfter) problems.push('it has no NotOnOrAfter');
    else if (now.getTime() >= notOnOrAfter.getTime() + CLOCK_SKEW_MS) problems.push('it has expired');
    else return notOnOrAfter;
  }
  throw invalid(`no bearer SubjectConfirmation holds${problems.length ? ` (${[...new Set(problems)].join('; ')})` : ''}`);
}

/** The Conditions: the time window, and every AudienceRestriction naming the box (at least one). Their NotOnOrAfter, if any. */
function conditionsHold(assertion: Element, expected: SamlExpectations, now: Date): Date | undefined {
  const conditions = onlyChild(assertion, SAML_NS.assertion, 'Conditions');
  const notBefore = timeOf(conditions, 'NotBefore');
  const notOnOrAfter = timeOf(conditions, 'NotOnOrAfter');
  if (notBefore && now.getTime() + CLOCK_SKEW_MS < notBefore.getTime()) throw invalid('the Assertion is not valid yet');
  if (notOnOrAfter && now.getTime() >= notOnOrAfter.getTime() + CLOCK_SKEW_MS) throw invalid('the Assertion has expired');
  const restrictions = childElements(conditions, SAML_NS.assertion, 'AudienceRestriction');
  if (restrictions.length === 0) throw invalid('the Assertion names no Audience');
  for (const restriction of restrictions) {
    const audiences = childElements(restriction, SAML_NS.assertion, 'Audience').map(textOf);
    if (!audiences.includes(expected.spEntityId)) throw invalid('the Assertion is for another Audience');
  }
  return notOnOrAfter;
}

function attributesOf(assertion: Element): Map<string, string[]> {
  const attributes = new Map<string, string[]>();
  for (const statement of childElements(assertion, SAML_NS.assertion, 'AttributeStatement'))
    for (const attribute of childElements(statement, SAML_NS.assertion, 'Attribute')) {
      const name = attributeOf(attribute, 'Name');
      if (!name) continue;
      const values = childElements(attribute, SAML_NS.assertion, 'AttributeValue').map(textOf);
      attributes.set(name, [...(attributes.get(name) ?? []), ...values]);
    }
  return attributes;
}

/** The attribute names common identity providers use (Keycloak, Shibboleth and eduPerson, ADFS and Entra ID, Okta), in the order tried. */
export const DEFAULT_ATTRIBUTES = {
  email: ['email', 'mail', 'urn:oid:0.9.2342.19200300.100.1.3', 'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/emailaddress'],
  name: ['name', 'displayName', 'urn:oid:2.16.840.1.113730.3.1.241', 'http://schemas.microsoft.com/identity/claims/displayname'],
  groups: ['groups', 'memberOf', 'urn:oid:1.3.6.1.4.1.5923.1.5.1.1', 'http://schemas.microsoft.com/ws/2008/06/identity/claims/groups'],
} as const;

/** AuthnContextClassRefs that say several factors were used (Entra ID and ADFS's), as RFC 8176 amr. */
const SEVERAL_FACTORS = new Set(['http://schemas.microsoft.com/claims/multipleauthn', 'https://refeds.org/profile/mfa']);

/**
 * The person an accepted Assertion names, as every provider's profile says it: the NameID is the
 * subject unless attributes.subject names an attribute (a transient NameID, new at every sign-in,
 * is no subject: refused); the first of the named or common attributes for the email, the name and
 * the groups. The address is vouched for only where the settings say the provider checks them.
 */
export function samlProfile(settings: SamlSettings, assertion: AcceptedAssertion): UpstreamProfile {
  const named = settings.attributes ?? {};
  const first = (names: readonly string[]): string[] | undefined => names.map((n) => assertion.attributes.get(n)).find((v) => v?.length);
  let subject = assertion.nameId;
  if (named.subject) {
    const values = assertion.attributes.get(named.subject) ?? [];
    if (values.length !== 1 || values[0] === '') throw invalid(`the attribute ${named.subject} does not hold one subject`);
    subject = values[0]!;
  } else if (assertion.nameIdFormat === TRANSIENT)
    throw new UpstreamError('unusable', 'the NameID is transient: ask for a persistent one (nameIdFormat) or name attributes.subject');
  const emailValue =
    first(named.email ? [named.email] : DEFAULT_ATTRIBUTES.email)?.[0] ??
    (named.email === undefined && assertion.nameIdFormat === NAMEID_FORMATS.emailAddress ? assertion.nameId : undefined);
  const email = emailFrom(emailValue);
  const name = first(named.name ? [named.name] : DEFAULT_ATTRIBUTES.name)?.[0];
  const claims: Record<string, unknown> = {};
  for (const [key, values] of assertion.attributes) claims[key] = values.length === 1 ? values[0] : values;
  return {
    subject,
    ...email,
    emailVerified: settings.emailVerified === true && email.email !== undefined,
    ...(name ? { name } : {}),
    groups: first(named.groups ? [named.groups] : DEFAULT_ATTRIBUTES.groups) ?? [],
    claims,
    amr: assertion.authnContext && SEVERAL_FACTORS.has(assertion.authnContext) ? ['mfa'] : [],
  };
}
