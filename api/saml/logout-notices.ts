// The `saml-logout` kind of the outbox of notices (api/notices/kinds.ts): when a browser session,
// or every session of a person, ends at the box, each SAML app the closed session signed in to
// (./sign-ins.ts) whose metadata has a SingleLogoutService of the SOAP binding is sent a
// LogoutRequest (SAML Core §3.7, Profiles §4.4.3.3 "the identity provider [...] MAY use [...] the
// SOAP binding") naming the NameID and SessionIndex its assertion gave, so that it ends its own
// session too, as back-channel logout tells OpenID Connect apps (api/oauth/backchannel-logout.ts).
// It goes through api/notices/post.ts (every address checked, no redirects, the deadline) with the
// back-channel kind's retries and give-up; the app's LogoutResponse is read, and any Status but
// Success is a failed delivery, tried again.
//
// An app with only an HTTP-Redirect SingleLogoutService is not told here: the Redirect binding needs
// the person's browser. A sign-out in that browser takes it to each such app (./logout-chains.ts); a
// close elsewhere does not have it, and cannot (docs/guides/saml-apps.md says so).
import type { Pool } from '../db/pool.js';
import { createHash } from 'node:crypto';
import type { Config } from '../config.js';
import type { Transaction } from '../db/pool.js';
import type { Keyring } from '../credentials/keyring.js';
import type { RecordCache } from '../cache/record-cache.js';
import { NoticeRefused, type BoxEvent, type ClosedSession, type Notice, type NoticeDraft, type NoticeKind } from '../notices/kinds.js';
import { postToReceiver, receiverRulesOf } from '../notices/post.js';
import { clients } from '../store/clients.js';
import type { Stored } from '../store/resources.js';
import type { Client } from '../types.js';
import { boxSamlKey } from './box-keys.js';
import { idpEndpoints } from './idp-metadata.js';
import { NAMEID_FORMATS, xmlEscaped, type NameIdFormat } from './names.js';
import type { ServiceProviders } from './service-providers.js';
import { signSamlXml } from './sign.js';
import { childElements, parseXml, refuseDeclarations, SAML_NS, SamlRefusal } from './xml.js';

/** As long as back-channel logout is tried, for its reasons (api/oauth/backchannel-logout.ts BACKCHANNEL_GIVE_UP_AFTER_MS). */
export const SAML_LOGOUT_GIVE_UP_AFTER_MS = 10 * 60_000;
/** A LogoutRequest's NotOnOrAfter: as short as a logout token's life (a retry signs it anew). */
export const LOGOUT_REQUEST_SECONDS = 120;

const SOAP_ENVELOPE_NS = 'http://schemas.xmlsoap.org/soap/envelope/';
const SUCCESS = 'urn:oasis:names:tc:SAML:2.0:status:Success';
/** The most of an app's answer read: a LogoutResponse is a few hundred bytes. */
const MAX_ANSWER_CHARS = 64 * 1024;

/** What a notice carries to its send: whom the app was told of (never a token). */
export interface SamlLogoutSubject {
  nameId: string;
  nameIdFormat: string;
  sessionIndex: string;
}

/** The notices of a close (pure): one per SAML sign-in it ended, of the apps in `told`. */
export function samlLogoutNotices(
  closed: readonly ClosedSession[],
  told: ReadonlySet<string>,
): Array<{ destination: string; payload: SamlLogoutSubject }> {
  const notices = new Map<string, { destination: string; payload: SamlLogoutSubject }>();
  for (const s of closed) {
    if (!s.saml || s.sid === null || !told.has(s.client)) continue;
    const payload = { nameId: s.saml.nameId, nameIdFormat: s.saml.nameIdFormat, sessionIndex: s.sid };
    notices.set(JSON.stringify([s.client, payload.nameId, payload.sessionIndex]), { destination: s.client, payload });
  }
  return [...notices.values()];
}

/** The LogoutRequest's ID: the same on every attempt, so that an app may drop a retry it took already. */
export function logoutRequestId(issuer: string, noticeId: string): string {
  return `_${createHash('sha256').update(`${issuer}\0saml-logout\0${noticeId}`).digest('hex')}`;
}

/**
 * Why a LogoutRequest is sent (Core §3.7.3's Reason): the person signed out in their browser
 * (api/saml/logout-chains.ts), or a close elsewhere - an admin, a password change - ended the session.
 */
export type LogoutReason = 'user' | 'admin';

/**
 * The LogoutRequest (Core §3.7.1) of `subject` to the SingleLogoutService `destination`, unsigned:
 * the one writer of both bindings' requests (SOAP here, signed enveloped; HTTP-Redirect in
 * ./logout-chains.ts, signed over the query).
 */
export function logoutRequestXml(
  issuer: string,
  destination: string,
  subject: SamlLogoutSubject,
  id: string,
  now: number,
  reason: LogoutReason = 'admin',
): string {
  const iso = (ms: number): string => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
  // A sign-in keeps the format by the name a Client writes (./sign-ins.ts): the NameID says it as the assertion did, by its URN.
  const format = Object.hasOwn(NAMEID_FORMATS, subject.nameIdFormat)
    ? NAMEID_FORMATS[subject.nameIdFormat as NameIdFormat]
    : subject.nameIdFormat;
  return (
    `<samlp:LogoutRequest xmlns:samlp="${SAML_NS.protocol}" xmlns:saml="${SAML_NS.assertion}" ID="${id}" Version="2.0" ` +
    `IssueInstant="${iso(now)}" Destination="${xmlEscaped(destination)}" NotOnOrAfter="${iso(now + LOGOUT_REQUEST_SECONDS * 1000)}" ` +
    `Reason="urn:oasis:names:tc:SAML:2.0:logout:${reason}">` +
    `<saml:Issuer>${xmlEscaped(idpEndpoints(issuer).entityId)}</saml:Issuer>` +
    `<saml:NameID Format="${xmlEscaped(format)}">${xmlEscaped(subject.nameId)}</saml:NameID>` +
    `<samlp:SessionIndex>${xmlEscaped(subject.sessionIndex)}</samlp:SessionIndex>` +
    '</samlp:LogoutRequest>'
  );
}

/** A SAML message in a SOAP 1.1 envelope (Bindings §3.2.3.1: the message the only child of the Body, no header required). */
export const soapEnvelope = (message: string): string =>
  `<soap:Envelope xmlns:soap="${SOAP_ENVELOPE_NS}"><soap:Body>${message.replace(/^<\?xml[^>]*\?>\s*/, '')}</soap:Body></soap:Envelope>`;

/**
 * The top-level StatusCode of the LogoutResponse in the app's SOAP answer; throws SamlRefusal when
 * the answer is none. Read with the checks of every document from outside (no DTD, no entity, no
 * processing instruction), direct children only; its signature is not asked for: the answer comes
 * on the connection the box opened to the address of the app's metadata (Bindings §3.2.2.2).
 */
export function logoutStatusOf(answer: string): string {
  if (answer.length > MAX_ANSWER_CHARS) throw new SamlRefusal('the answer is too large');
  refuseDeclarations(answer);
  const envelope = parseXml(answer).documentElement;
  if (envelope.namespaceURI !== SOAP_ENVELOPE_NS || envelope.localName !== 'Envelope')
    throw new SamlRefusal('the answer is no SOAP envelope');
  const body = childElements(envelope, SOAP_ENVELOPE_NS, 'Body')[0];
  const response = body && childElements(body, SAML_NS.protocol, 'LogoutResponse')[0];
  const status = response && childElements(response, SAML_NS.protocol, 'Status')[0];
  const code = status && childElements(status, SAML_NS.protocol, 'StatusCode')[0];
  const value = code?.getAttribute('Value');
  if (!value) throw new SamlRefusal('the answer holds no LogoutResponse with a StatusCode');
  return value;
}

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
interface Needs {
  config: Config;
  pool: Pool;
  keyring: Keyring;
  clients: RecordCache<Stored<Client>>;
  serviceProviders: ServiceProviders;
}

/** The SOAP SingleLogoutService of `client` as its metadata says it now; undefined: it has none. */
async function soapLogoutUrlOf(svc: Pick<Needs, 'serviceProviders'>, client: Client): Promise<string | undefined> {
  return client.saml ? (await svc.serviceProviders.of(client)).soapLogoutUrls[0] : undefined;
}

/** The `saml-logout` kind of notice, for the outbox (api/notice-kinds.ts names it). */
export function samlLogoutKind(svc: Pick<Needs, 'config' | 'pool' | 'keyring' | 'clients' | 'serviceProviders'>): NoticeKind {
  return {
    giveUpAfterMs: SAML_LOGOUT_GIVE_UP_AFTER_MS,
    async fanOut(tx: Transaction, event: BoxEvent): Promise<NoticeDraft[]> {
      const close = event.event;
      if (close.event !== 'session_closed') return [];
      // An app that asked for the close itself (its own LogoutRequest) knows of it.
      const closed = (event.facts.closed ?? []).filter((s) => s.saml !== undefined && close.by.client !== s.client);
      if (!closed.length) return [];
      const told = new Set<string>();
      for (const id of new Set(closed.map((s) => s.client))) {
        const client = (await clients.read(tx, id))?.resource;
        if (!client?.saml) continue;
        // An app whose metadata cannot be had now is given its notice: the send reads the metadata again, and retries.
        const url = await soapLogoutUrlOf(svc, client).catch(() => 'unknown');
        if (url !== undefined) told.add(id);
      }
      // One person's LogoutRequests reach each app in order; different people's, at once.
      return samlLogoutNotices(closed, told).map((n) => ({
        destination: n.destination,
        subject: n.payload.nameId,
        payload: { ...n.payload },
      }));
    },
    async send(notice: Notice, signal: AbortSignal): Promise<void> {
      // The app as it is now: one removed, no longer SAML, or without a SOAP endpoint any more is told nothing.
      const client = (await svc.clients.get(notice.destination))?.resource;
      const url = client && (await soapLogoutUrlOf(svc, client));
      if (!url) throw new NoticeRefused(`client ${notice.destination} has no SAML SingleLogoutService of the SOAP binding any more`);
      const issuer = svc.config.baseUrl;
      const xml = logoutRequestXml(
        issuer,
        url,
        notice.payload as unknown as SamlLogoutSubject,
        logoutRequestId(issuer, notice.id),
        Date.now(),
      );
      const signed = signSamlXml(xml, 'LogoutRequest', boxSamlKey(svc.keyring));
      // Bindings §3.2.3.3: "text/xml", and the SOAPAction header of SOAP 1.1 with this value.
      const answer = await postToReceiver(
        url,
        {
          headers: { 'Content-Type': 'text/xml; charset=utf-8', SOAPAction: 'http://www.oasis-open.org/committees/security' },
          body: soapEnvelope(signed),
          signal,
        },
        await receiverRulesOf(svc),
      );
      if (answer.status !== 200) throw new Error(`the app answered ${answer.status}`);
      const status = logoutStatusOf(answer.body);
      if (status !== SUCCESS) throw new Error(`the app answered the LogoutRequest with status ${status}`);
    },
  };
}
