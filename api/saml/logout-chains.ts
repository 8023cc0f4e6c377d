// Single Logout through the person's browser (SAML Profiles §4.4.3, HTTP-Redirect): when a person
// signs out in their browser - the box's sign-out, OpenID Connect's RP-initiated logout, a SAML
// app's own LogoutRequest, or the account page's end of this very browser - the SAML apps that
// browser session signed in to (./sign-ins.ts) and that have only an HTTP-Redirect
// SingleLogoutService are told through that browser: it goes to
// each in turn with a LogoutRequest, signed over the query as the Redirect binding signs
// (./sign.ts), naming what the SOAP notice names (./logout-notices.ts logoutRequestXml, the one
// writer of both), and comes back to /auth/saml/slo with the app's LogoutResponse; then the next
// app, and at the end the place the sign-out was going. Apps with a SOAP SingleLogoutService stay
// with the outbox (./logout-notices.ts), which needs no browser.
//
// The chain is kept server-side (api/store/saml-logout-chains.ts): RelayState may carry 80 bytes
// (Bindings §3.4.3), so it carries only a random handle, and the chain is found by that handle
// and the browser it was started in (its CSRF cookie): another browser, or a guessed handle,
// finds nothing. An answer moves the chain only when its InResponseTo is the LogoutRequest the
// chain awaits, once (two tabs racing one answer: one moves it). Such an answer that is not
// Success, not signed with the app's certificates (Profiles §4.4.4.2: the response MUST be
// authenticated on the front channel), not from the app or not to this box, counts as a partial
// logout and the chain goes on: the box session is closed already. Every place the browser is
// sent was checked before the chain began (the app's metadata, a return_to, a registered
// post_logout_redirect_uri), and is kept here, never carried by the browser.
import { createHash, randomBytes } from 'node:crypto';
import type { RecordCache } from '../cache/record-cache.js';
import type { Config } from '../config.js';
import { closedSession } from '../credentials/closing.js';
import type { Keyring } from '../credentials/keyring.js';
import type { Pool } from '../db/pool.js';
import type { Logger } from '../log.js';
import {
  createLogoutChain,
  logoutChainOf,
  moveLogoutChainOn,
  type LogoutChainKey,
  type LogoutChainRow,
} from '../store/saml-logout-chains.js';
import type { Stored } from '../store/resources.js';
import type { SessionRow } from '../store/sessions.js';
import type { Client } from '../types.js';
import { decodeRedirectMessage, encodeRedirectMessage } from './bindings.js';
import { boxSamlKey } from './box-keys.js';
import { logoutResponseXml, type SloRequest } from './idp.js';
import { idpEndpoints } from './idp-metadata.js';
import { logoutRequestXml, type SamlLogoutSubject } from './logout-notices.js';
import { newSamlId } from './names.js';
import type { ServiceProvider, ServiceProviders } from './service-providers.js';
import { signRedirectQuery } from './sign.js';
import { verifyRedirectSignature } from './verify.js';
import { childElements, readSamlXml, SAML_NS, SamlRefusal, textOf } from './xml.js';

/** How long a chain stands: a redirect to each app and its answer back take seconds; a slow app's page, a little more. */
export const LOGOUT_CHAIN_SECONDS = 10 * 60;

const SUCCESS = 'urn:oasis:names:tc:SAML:2.0:status:Success';

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
interface Needs {
  config: Config;
  pool: Pool;
  keyring: Keyring;
  clients: RecordCache<Stored<Client>>;
  serviceProviders: ServiceProviders;
  log: Logger;
}

export type LogoutChainServices = Needs;

/** One app of a chain: whom it is told of, and the ID of the LogoutRequest it is sent (its answer's InResponseTo). */
interface Hop {
  client: string;
  subject: SamlLogoutSubject;
  requestId: string;
}

/** Where the browser goes when every app has been visited: each a place the box checked before the chain began. */
export type LogoutEnd =
  /** A return_to of the box's own pages, or a post_logout_redirect_uri its client registered. */
  | { to: 'place'; url: string }
  /** The box's page saying the person is signed out. */
  | { to: 'page' }
  /** The LogoutResponse to the app whose LogoutRequest began the sign-out (./idp.ts readLogoutRequest checked it). */
  | { to: 'app'; answer: Pick<SloRequest, 'requestId' | 'logoutUrl' | 'relayState'> };

/** What the browser is to be given now. */
/** Why a step of a sign-out is refused, as the page says it (api/http/saml-logout.ts): `answerRefused` the SAML reason. */
export type LogoutRefusal = 'over' | 'notAwaited' | 'taken' | { answerRefused: string };

export type LogoutStep = { redirect: string } | { page: 'signed-out' } | { refused: LogoutRefusal };

type Chain = LogoutChainRow<Hop, LogoutEnd>;

const sha256 = (text: string): Buffer => createHash('sha256').update(text).digest();
const keyOf = (handle: string, browser: string): LogoutChainKey => ({ handleHash: sha256(handle), browserHash: sha256(browser) });
const withQuery = (url: string, query: string): string => `${url}${url.includes('?') ? '&' : '?'}${query}`;

/** The app of `clientId` as its metadata says it now; undefined when it is no longer a SAML app or its metadata cannot be had. */
async function providerOf(svc: Pick<Needs, 'clients' | 'serviceProviders'>, clientId: string): Promise<ServiceProvider | undefined> {
  const client = (await svc.clients.get(clientId))?.resource;
  return client?.saml ? svc.serviceProviders.of(client).catch(() => undefined) : undefined;
}

/**
 * The apps the browser is to visit for the sessions a sign-out closed: each SAML sign-in of an app
 * with an HTTP-Redirect SingleLogoutService and no SOAP one, once per NameID and SessionIndex.
 */
async function hopsOf(svc: Pick<Needs, 'clients' | 'serviceProviders'>, closed: readonly SessionRow[]): Promise<Hop[]> {
  const hops = new Map<string, Hop>();
  for (const s of closed.map(closedSession)) {
    if (!s.saml || s.sid === null) continue;
    const subject = { nameId: s.saml.nameId, nameIdFormat: s.saml.nameIdFormat, sessionIndex: s.sid };
    const key = JSON.stringify([s.client, subject.nameId, subject.sessionIndex]);
    if (hops.has(key)) continue;
    const sp = await providerOf(svc, s.client);
    // An app whose metadata cannot be read now is the outbox's: it reads the metadata again, and retries.
    if (!sp || sp.soapLogoutUrls.length > 0 || sp.logoutUrls.length === 0) continue;
    hops.set(key, { client: s.client, subject, requestId: newSamlId() });
  }
  return [...hops.values()];
}

/**
 * Begins the chain of a sign-out in `browser` (its CSRF cookie's id) that closed `closed`: the
 * step to its first app; undefined when there is no app to visit (the caller goes to `end` as
 * before). `partial`: the sign-out is partial already (an app's LogoutRequest named someone else).
 */
export async function startLogoutChain(
  svc: Needs,
  closed: readonly SessionRow[],
  browser: string,
  end: LogoutEnd,
  partial = false,
): Promise<LogoutStep | undefined> {
  const hops = await hopsOf(svc, closed);
  if (!hops.length) return undefined;
  const handle = randomBytes(32).toString('base64url');
  const chain: Chain = { hops, position: 0, partial, finish: end };
  const now = Date.now();
  await createLogoutChain(svc.pool, keyOf(handle, browser), chain, new Date(now + LOGOUT_CHAIN_SECONDS * 1000));
  svc.log.info({ event: 'saml_logout_started', clients: hops.map((h) => h.client) }, 'SAML logout through the browser');
  return stepOf(svc, handle, browser, chain);
}

/**
 * An app's LogoutResponse to a chain (GET /auth/saml/slo?SAMLResponse=...), `browser` the id this
 * browser presents: the step to the next app, or to the chain's end; a refusal moves nothing.
 */
export async function answeredHop(
  svc: Needs,
  message: { samlResponse: string; relayState: string | undefined; rawQuery: string },
  browser: string | undefined,
): Promise<LogoutStep> {
  const over: LogoutStep = { refused: 'over' };
  if (browser === undefined || message.relayState === undefined) return over;
  const key = keyOf(message.relayState, browser);
  const chain = await logoutChainOf<Hop, LogoutEnd>(svc.pool, key, new Date());
  const hop = chain?.hops[chain.position];
  if (!chain || !hop) return over;
  let answer: LogoutAnswer;
  try {
    answer = await readLogoutResponse(message.samlResponse);
  } catch (err) {
    if (!(err instanceof SamlRefusal)) throw err;
    svc.log.info({ event: 'saml_logout_answer_refused', client: hop.client, reason: err.reason }, 'SAML logout answer refused');
    return { refused: { answerRefused: err.reason } };
  }
  if (answer.inResponseTo !== hop.requestId) {
    svc.log.info(
      { event: 'saml_logout_answer_refused', client: hop.client, reason: 'not the answer to the LogoutRequest awaited' },
      'SAML logout answer refused',
    );
    return { refused: 'notAwaited' };
  }
  const problem = await problemOf(svc, hop, answer, message.rawQuery);
  if (problem !== undefined)
    svc.log.info({ event: 'saml_logout_app_failed', client: hop.client, reason: problem }, 'a SAML app did not sign out');
  const moved = await moveLogoutChainOn<Hop, LogoutEnd>(svc.pool, key, chain.position, problem !== undefined, new Date());
  if (!moved) return { refused: 'taken' };
  return stepOf(svc, message.relayState, browser, moved);
}

/** The LogoutResponse to an app's LogoutRequest, on its way back to the app's SingleLogoutService, signed over the query. */
export function logoutAnswerUrl(
  svc: Pick<Needs, 'config' | 'keyring'>,
  answer: Pick<SloRequest, 'requestId' | 'logoutUrl' | 'relayState'>,
  partial: boolean,
): string {
  const xml = logoutResponseXml(svc.config.baseUrl, answer, partial, Date.now());
  const query = signRedirectQuery(
    { SAMLResponse: encodeRedirectMessage(xml), ...(answer.relayState !== undefined ? { RelayState: answer.relayState } : {}) },
    boxSamlKey(svc.keyring),
  );
  return withQuery(answer.logoutUrl, query);
}

/** The step of `chain` as it stands: the LogoutRequest to the app at its position (one gone meanwhile is passed, partial), or its end. */
async function stepOf(svc: Needs, handle: string, browser: string, chain: Chain): Promise<LogoutStep> {
  for (let at: Chain | undefined = chain; at;) {
    const hop = at.hops[at.position];
    if (!hop) return endOf(svc, at);
    const url = (await providerOf(svc, hop.client))?.logoutUrls[0];
    if (url !== undefined) return { redirect: logoutRequestUrl(svc, url, hop, handle) };
    svc.log.info(
      { event: 'saml_logout_app_failed', client: hop.client, reason: 'the app has no HTTP-Redirect SingleLogoutService any more' },
      'a SAML app did not sign out',
    );
    at = await moveLogoutChainOn<Hop, LogoutEnd>(svc.pool, keyOf(handle, browser), at.position, true, new Date());
  }
  return { refused: 'taken' };
}

function endOf(svc: Needs, chain: Chain): LogoutStep {
  if (chain.partial) svc.log.info({ event: 'saml_logout_partial', clients: chain.hops.map((h) => h.client) }, 'SAML logout partial');
  const end = chain.finish;
  if (end.to === 'place') return { redirect: end.url };
  if (end.to === 'page') return { page: 'signed-out' };
  return { redirect: logoutAnswerUrl(svc, end.answer, chain.partial) };
}

/** The LogoutRequest of `hop` to the app's SingleLogoutService `url`, RelayState the chain's handle, signed over the query. */
function logoutRequestUrl(svc: Pick<Needs, 'config' | 'keyring'>, url: string, hop: Hop, handle: string): string {
  const xml = logoutRequestXml(svc.config.baseUrl, url, hop.subject, hop.requestId, Date.now(), 'user');
  return withQuery(url, signRedirectQuery({ SAMLRequest: encodeRedirectMessage(xml), RelayState: handle }, boxSamlKey(svc.keyring)));
}

/** What a LogoutResponse says, as read: nothing of it is trusted until problemOf finds nothing wrong. */
interface LogoutAnswer {
  inResponseTo: string | undefined;
  issuer: string | undefined;
  destination: string | undefined;
  status: string | undefined;
}

/** A LogoutResponse of the HTTP-Redirect binding, read (schema first: ./xml.ts); throws SamlRefusal when it is none. */
async function readLogoutResponse(samlResponse: string): Promise<LogoutAnswer> {
  const doc = await readSamlXml(decodeRedirectMessage(samlResponse), 'protocol');
  const response = doc.documentElement;
  if (!response || response.namespaceURI !== SAML_NS.protocol || response.localName !== 'LogoutResponse')
    throw new SamlRefusal('the SAMLResponse is not a LogoutResponse');
  const attr = (name: string): string | undefined => (response.hasAttribute(name) ? response.getAttribute(name)! : undefined);
  const issuer = childElements(response, SAML_NS.assertion, 'Issuer')[0];
  const status = childElements(response, SAML_NS.protocol, 'Status')[0];
  const code = status && childElements(status, SAML_NS.protocol, 'StatusCode')[0];
  return {
    inResponseTo: attr('InResponseTo'),
    issuer: issuer && textOf(issuer),
    destination: attr('Destination'),
    status: code?.getAttribute('Value') ?? undefined,
  };
}

/** Why an answer to `hop` does not say that its app signed the person out; undefined: it does. */
async function problemOf(svc: Needs, hop: Hop, answer: LogoutAnswer, rawQuery: string): Promise<string | undefined> {
  const sp = await providerOf(svc, hop.client);
  if (!sp) return 'the app is no longer a SAML app of the box, or its metadata cannot be read';
  if (answer.issuer !== sp.entityId) return "the LogoutResponse's Issuer is not the app";
  if (!verifyRedirectSignature(rawQuery, sp.signingCertificates)) return "the LogoutResponse is not signed with the app's certificates";
  if (answer.destination !== undefined && answer.destination !== idpEndpoints(svc.config.baseUrl).slo)
    return "the LogoutResponse's Destination is not this box's SLO URL";
  if (answer.status !== SUCCESS) return `the app answered with the status ${answer.status ?? '(none)'}`;
  return undefined;
}
