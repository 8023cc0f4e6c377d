// OpenID Connect Back-Channel Logout 1.0: when a browser session, or a grant of a person, ends at
// the box, each relying party that registered a backchannel_logout_uri and held a grant of it is
// sent a logout token, so that it ends its own session too. The `backchannel` kind of the outbox
// of notices (api/notices/kinds.ts): the fan-out decides who is told what (pure, below), the send
// builds and signs the token and POSTs it through api/notices/post.ts (no redirects, a deadline,
// every address checked).
import type { Pool } from '../db/pool.js';
import { createHash } from 'node:crypto';
import type { Config } from '../config.js';
import type { Transaction } from '../db/pool.js';
import type { Keyring } from '../credentials/keyring.js';
import { signJwt } from '../credentials/jwt.js';
import type { RecordCache } from '../cache/record-cache.js';
import type { Stored } from '../store/resources.js';
import { clients } from '../store/clients.js';
import type { Client } from '../types.js';
import { NoticeRefused, type BoxEvent, type ClosedSession, type Notice, type NoticeDraft, type NoticeKind } from '../notices/kinds.js';
import { administeredUrlProblem, postToReceiver, receiverRulesOf } from '../notices/post.js';
import { idTokenAlgOf } from './openid.js';

/** The one event a logout token carries (§2.4: "http://schemas.openid.net/event/backchannel-logout"). */
export const BACKCHANNEL_LOGOUT_EVENT = 'http://schemas.openid.net/event/backchannel-logout';
/**
 * §2.4: "the exp claim [...] a short time in the future"; the spec's own recommendation is "about
 * two minutes". A retry signs the token again, with the same jti, so a slow receiver is no reason for more.
 */
export const LOGOUT_TOKEN_SECONDS = 120;
/**
 * How long a logout is tried: ten minutes, enough to ride out a relying party's restart or rolling
 * update, no more. A logout token naming only `sub` ends every session of that person at the
 * relying party (§2.4: "the RP MUST log out all sessions for the sub"), so one delivered long after
 * its close would also end the sessions the person signed in to since; and a person who was told
 * they were signed out expects it to have happened within minutes or not at all (the give-up is
 * audited and counted, api/notices/).
 */
export const BACKCHANNEL_GIVE_UP_AFTER_MS = 10 * 60_000;

/** What a logout notice carries to its send: whom it is about (never a token, never a secret). */
export interface LogoutSubject {
  sid?: string;
  sub?: string;
}

/** The part of a Client this decides with. */
type Receiver = Pick<Client, 'id' | 'backchannel_logout_uri' | 'backchannel_logout_session_required'>;

/**
 * Whether a close tells `client` of the sessions it ended. A client that revoked its own token
 * (RFC 7009) knows it did: a logout token would tell it what it just asked for.
 */
function tellsClient(event: Extract<BoxEvent['event'], { event: 'session_closed' }>, client: string): boolean {
  return !(event.how === 'revoke' && event.by.client === client);
}

/**
 * The logout notices a close makes (pure): for each client with a backchannel_logout_uri, one per
 * browser session (`sid`) of the person's grants it held, and one naming only the person (`sub`)
 * for the grants that came from no browser session (§2.4: "A Logout Token MUST contain either a sub
 * or a sid Claim, and MAY contain both"). A client that registered
 * backchannel_logout_session_required is told only of browser sessions: §2.4 "If [it] is true, the
 * OP MUST include a sid Claim", and a grant without one has none to give. A client's own sessions
 * (client credentials, no person) end no person's session at it.
 */
export function logoutNotices(
  event: BoxEvent['event'],
  closed: readonly ClosedSession[],
  receivers: ReadonlyMap<string, Receiver>,
): Array<{ destination: string; payload: LogoutSubject }> {
  if (event.event !== 'session_closed') return [];
  const notices = new Map<string, { destination: string; payload: LogoutSubject }>();
  for (const s of closed) {
    const client = receivers.get(s.client);
    // A SAML app's sign-in is told by a LogoutRequest (api/saml/logout-notices.ts), never by a logout token.
    if (s.user === null || s.saml !== undefined || !client?.backchannel_logout_uri || !tellsClient(event, client.id)) continue;
    if (s.sid === null && client.backchannel_logout_session_required) continue;
    // §2.4: "sub ... Subject Identifier": the one the client's ID tokens carry (api/credentials/subjects.ts).
    const payload: LogoutSubject = { sub: s.sub ?? String(s.user), ...(s.sid !== null ? { sid: s.sid } : {}) };
    notices.set(JSON.stringify([client.id, payload.sid ?? null, payload.sub]), { destination: client.id, payload });
  }
  return [...notices.values()];
}

/** §2.4's claims of the logout token of `notice` for `client`: never a nonce (§2.4: "A nonce Claim MUST NOT be present"). */
export function logoutTokenClaims(
  issuer: string,
  client: string,
  notice: Pick<Notice, 'id' | 'payload'>,
  now: number,
): Record<string, unknown> {
  const iat = Math.floor(now / 1000);
  const { sid, sub } = notice.payload as LogoutSubject;
  return {
    iss: issuer,
    ...(sub !== undefined ? { sub } : {}),
    aud: client,
    iat,
    exp: iat + LOGOUT_TOKEN_SECONDS,
    jti: logoutTokenId(issuer, notice.id),
    events: { [BACKCHANNEL_LOGOUT_EVENT]: {} },
    ...(sid !== undefined ? { sid } : {}),
  };
}

/** The jti of a notice's logout token: the same on every attempt, so a receiver that got it once may drop a retry as a replay. */
export function logoutTokenId(issuer: string, noticeId: string): string {
  return createHash('sha256').update(`${issuer}\0backchannel-logout\0${noticeId}`).digest('base64url');
}

/** §2.8: "If the logout succeeded, the RP MUST respond with HTTP 200 OK"; 204 is what many frameworks answer for it. */
export const acknowledged = (status: number): boolean => status === 200 || status === 204;

/**
 * Why a client's backchannel_logout_uri cannot be written (a sentence after the field's name), or
 * undefined: §2.2 "MUST NOT include a fragment component", an http(s) URL, never the box itself.
 * Its addresses are the send's to judge (api/notices/post.ts administeredUrlProblem says why).
 */
export function backchannelLogoutUriProblem(client: Pick<Client, 'backchannel_logout_uri'>, boxUrl: string): string | undefined {
  return client.backchannel_logout_uri === undefined ? undefined : administeredUrlProblem(client.backchannel_logout_uri, boxUrl);
}

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
interface Needs {
  config: Config;
  pool: Pool;
  keyring: Keyring;
  clients: RecordCache<Stored<Client>>;
}

/** The `backchannel` kind of notice, for the outbox (api/notice-kinds.ts names it). */
export function backchannelLogoutKind(svc: Pick<Needs, 'config' | 'pool' | 'keyring' | 'clients'>): NoticeKind {
  return {
    giveUpAfterMs: BACKCHANNEL_GIVE_UP_AFTER_MS,
    async fanOut(tx: Transaction, event: BoxEvent): Promise<NoticeDraft[]> {
      const closed = event.facts.closed ?? [];
      if (event.event.event !== 'session_closed' || !closed.length) return [];
      const receivers = new Map<string, Receiver>();
      for (const id of new Set(closed.filter((s) => s.user !== null).map((s) => s.client))) {
        const client = (await clients.read(tx, id))?.resource;
        if (client?.backchannel_logout_uri) receivers.set(id, client);
      }
      // A person's logout tokens reach each client in order; different people's, at once.
      return logoutNotices(event.event, closed, receivers).map((n) => ({
        destination: n.destination,
        subject: n.payload.sub,
        payload: { ...n.payload },
      }));
    },
    async send(notice: Notice, signal: AbortSignal): Promise<void> {
      // The client as it is now: one deleted, or that no longer asks for logout tokens, is told nothing.
      const client = (await svc.clients.get(notice.destination))?.resource;
      const uri = client?.backchannel_logout_uri;
      if (!client || !uri) throw new NoticeRefused(`client ${notice.destination} has no backchannel_logout_uri any more`);
      // §2.4: "signed [...] with the same key and algorithm as the ID Tokens issued to this RP".
      const key = svc.keyring.activeFor(idTokenAlgOf(client));
      const token = signJwt(key, logoutTokenClaims(svc.config.baseUrl, client.id, notice, Date.now()), 'logout+jwt');
      // §2.5: "The OP sends [...] a POST request [...] using the application/x-www-form-urlencoded media type with [the] logout_token parameter".
      const answer = await postToReceiver(
        uri,
        {
          headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ logout_token: token }).toString(),
          signal,
        },
        await receiverRulesOf(svc),
      );
      // §2.8: "If the logout failed, the RP MUST respond with HTTP 400 Bad Request": its failure may be passing (its store away), so it is tried again.
      if (!acknowledged(answer.status)) throw new Error(`the relying party answered ${answer.status}`);
    },
  };
}
