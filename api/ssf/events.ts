// Which Shared Signals events a box event makes (CAEP 1.0, RISC 1.0): pure, one rule per audit
// event, each quoting what it implements. The events are about people: a close of a client's own
// session (client credentials) says nothing about anyone, and makes none.
import type { Actor, AuditEvent, CloseReason } from '../audit.js';
import { isAcr, meets } from '../credentials/acr.js';
import { FACTOR_KIND_NAMES, RECOVERY_CODES, ssfCredentialOf } from '../factor-kinds.js';
import type { BoxEvent, ClosedSession } from '../notices/kinds.js';

const CAEP = 'https://schemas.openid.net/secevent/caep/event-type/';
const RISC = 'https://schemas.openid.net/secevent/risc/event-type/';

export const SESSION_REVOKED = `${CAEP}session-revoked`;
export const CREDENTIAL_CHANGE = `${CAEP}credential-change`;
export const ASSURANCE_LEVEL_CHANGE = `${CAEP}assurance-level-change`;
export const ACCOUNT_DISABLED = `${RISC}account-disabled`;
export const ACCOUNT_ENABLED = `${RISC}account-enabled`;
export const ACCOUNT_PURGED = `${RISC}account-purged`;
/** SSF 1.0 §8.1.4: sent on request (with the receiver's `state`), whatever the stream asked for. */
export const VERIFICATION = 'https://schemas.openid.net/secevent/ssf/event-type/verification';

/**
 * The event types the box sends (a stream's `events_supported`). RISC credential-compromise is not
 * among them: no box event says a person's credential was stolen (a replayed refresh token ends its
 * grant, and is a token, not a credential CAEP names); device-compliance-change neither: the box
 * knows no device's compliance (docs/guides/sign-out-everywhere.md).
 */
export const EVENTS_SUPPORTED: readonly string[] = [
  SESSION_REVOKED,
  CREDENTIAL_CHANGE,
  ASSURANCE_LEVEL_CHANGE,
  ACCOUNT_DISABLED,
  ACCOUNT_ENABLED,
  ACCOUNT_PURGED,
];

/** CAEP 1.0 §2: who or what caused the event. */
type InitiatingEntity = 'admin' | 'user' | 'policy' | 'system';

/** One event about one person, as a notice's payload keeps it until it is sent (never a secret). */
export interface SignalDraft {
  type: string;
  /** The person (users.id). */
  user: number;
  /** The browser session the event is about (its `sid`), for a session-revoked of one. */
  sid: string | null;
  /** The event's members (CAEP's event-specific and common claims), event_timestamp aside. */
  claims: Record<string, unknown>;
}

/** CAEP 1.0 §2: initiating_entity — the person themselves, an administrator, or a rule of the box. */
const CLOSE_INITIATOR: Record<CloseReason, InitiatingEntity> = {
  'sign-out': 'user',
  revoke: 'user',
  logout: 'user',
  api: 'admin',
  'refresh-token-reuse': 'policy',
  'code-replay': 'policy',
  'password-change': 'user',
  'user-deleted': 'admin',
  'client-deleted': 'admin',
  'factors-reset': 'admin',
  'recovery-code': 'user',
  'password-reset': 'user',
  'consent-withdrawn': 'user',
  deactivated: 'admin',
  unlinked: 'user',
  adopted: 'admin',
};

/** CAEP 1.0 §2 reason_admin: a message for the receiver's administrators, by language. */
const CLOSE_REASON: Record<CloseReason, string> = {
  'sign-out': 'The person signed out.',
  revoke: 'The token was revoked.',
  logout: 'The person logged out at an application.',
  api: 'An administrator closed the session.',
  'refresh-token-reuse': 'A refresh token was used twice: the grant is presumed stolen.',
  'code-replay': 'An authorization code was used twice: the grant is presumed stolen.',
  'password-change': 'The password changed.',
  'user-deleted': 'The account was deleted.',
  'client-deleted': 'The application was removed.',
  'factors-reset': "An administrator reset the person's second factors.",
  'recovery-code': 'The person signed in with a recovery code.',
  'password-reset': 'The password was reset.',
  'consent-withdrawn': 'The person withdrew their consent.',
  deactivated: 'The account was turned off.',
  unlinked: 'An upstream identity was unlinked.',
  adopted: 'An administrator took the account over from whoever made it.',
};

/** Who acted on person `user`: themselves, or an administrator (a token of another person or a client's). */
const initiator = (by: Actor | undefined, user: string): InitiatingEntity => (by?.user === user ? 'user' : 'admin');

/**
 * CAEP 1.0 §3.1 session-revoked: "the session of the subject has been revoked". One per person and
 * signed-in browser (`sid`) a close ended: the tokens of one sign-in end together, and a receiver
 * knows the session by its `sid`, not by each token.
 */
function sessionsRevoked(closed: ClosedSession[], how: CloseReason): SignalDraft[] {
  const seen = new Set<string>();
  const drafts: SignalDraft[] = [];
  for (const s of closed) {
    if (s.user === null) continue;
    const key = `${s.user}/${s.sid ?? ''}`;
    if (seen.has(key)) continue;
    seen.add(key);
    drafts.push({
      type: SESSION_REVOKED,
      user: s.user,
      sid: s.sid,
      claims: { initiating_entity: CLOSE_INITIATOR[how], reason_admin: { en: CLOSE_REASON[how] } },
    });
  }
  return drafts;
}

/** CAEP 1.0 §3.3 credential-change: credential_type and change_type (create, revoke, update, delete). */
const credentialChange = (user: number, credentialType: string, changeType: string, by: InitiatingEntity): SignalDraft => ({
  type: CREDENTIAL_CHANGE,
  user,
  sid: null,
  claims: { credential_type: credentialType, change_type: changeType, initiating_entity: by },
});

function factorChange(event: Extract<AuditEvent, { event: 'factor' }>): SignalDraft[] {
  const user = Number(event.user);
  const by = initiator(event.by, event.user);
  switch (event.action) {
    case 'enrolled':
      return event.kind ? [credentialChange(user, ssfCredentialOf(event.kind), 'create', by)] : [];
    case 'removed':
      return event.kind ? [credentialChange(user, ssfCredentialOf(event.kind), 'delete', by)] : [];
    case 'reset':
      // Every factor and recovery code went at once: an administrator revoked them.
      return FACTOR_KIND_NAMES.map((kind) => credentialChange(user, ssfCredentialOf(kind), 'revoke', 'admin'));
    case 'recovery-code-used':
      return [credentialChange(user, RECOVERY_CODES.ssfCredential, 'delete', by)];
    case 'recovery-codes-made':
      return [credentialChange(user, RECOVERY_CODES.ssfCredential, 'create', by)];
  }
}

/**
 * CAEP 1.0 §3.4 assurance-level-change `namespace`: "Any other value that is an alias for a custom
 * namespace agreed between the Transmitter and the Receiver". The levels are the box's own `acr`
 * values, weakest first `urn:boxauth:acr:password`, `urn:boxauth:acr:mfa`, `phr` (discovery's
 * acr_values_supported, the `acr` of its ID tokens): a receiver compares them as it compares the
 * `acr` of an ID token. Not `NIST-AAL`: the box checks no authenticator against SP 800-63B (a
 * synced passkey is phishing-resistant, yet not AAL3), so it would claim what it does not know; not
 * `RFC8176`: `amr` values name methods, not levels on a ladder.
 */
export const ACR_NAMESPACE = 'urn:boxauth:acr';

/** CAEP 1.0 §2 reason_admin of an assurance-level-change, by how the session was strengthened. */
const STRENGTHENED_REASON: Record<Extract<AuditEvent, { event: 'session_strengthened' }>['action'], string> = {
  'factor-given': 'The person gave a further factor in this session.',
  'factor-enrolled': 'The person enrolled a factor in this session, which counts from now on.',
};

/**
 * CAEP 1.0 §3.4 assurance-level-change, about the browser session (`sid`) whose class of sign-in
 * changed: "current_level [...] REQUIRED", "previous_level [...] OPTIONAL", and "If the
 * Transmitter has specified the `previous_level`, then the Transmitter SHOULD provide a value for
 * [change_direction]". A session strengthened without a change of class (a passkey added to one
 * that proved a code already, a proof renewed) makes none: its level did not change.
 */
function assuranceLevelChange(event: Extract<AuditEvent, { event: 'session_strengthened' }>): SignalDraft[] {
  const { from, to } = event;
  if (from.acr === to.acr || !isAcr(from.acr) || !isAcr(to.acr)) return [];
  return [
    {
      type: ASSURANCE_LEVEL_CHANGE,
      user: Number(event.user),
      sid: event.sid,
      claims: {
        namespace: ACR_NAMESPACE,
        current_level: to.acr,
        previous_level: from.acr,
        change_direction: meets(to.acr, from.acr) ? 'increase' : 'decrease',
        initiating_entity: initiator(event.by, event.user),
        reason_admin: { en: STRENGTHENED_REASON[event.action] },
      },
    },
  ];
}

/** RISC 1.0 §2.3 account-disabled, §2.4 account-enabled: the person turned off and on (SCIM active, the REST API's). */
function accountTurned(event: Extract<AuditEvent, { event: 'account' }>): SignalDraft[] {
  if (event.user === undefined) return [];
  const user = Number(event.user);
  if (event.action === 'deactivated') return [{ type: ACCOUNT_DISABLED, user, sid: null, claims: {} }];
  if (event.action === 'activated') return [{ type: ACCOUNT_ENABLED, user, sid: null, claims: {} }];
  return [];
}

/**
 * A person's record written: a new password (every way one is written goes through
 * people/accounts.ts, which records it here as a changed `password`) is CAEP credential-change;
 * the record deleted is RISC 1.0 §2.2 account-purged ("the account has been permanently deleted").
 */
function personChanged(event: Extract<AuditEvent, { event: 'record_changed' }>): SignalDraft[] {
  if (event.kind !== 'User') return [];
  const user = Number(event.id);
  if (event.action === 'deleted') return [{ type: ACCOUNT_PURGED, user, sid: null, claims: {} }];
  if (event.action === 'changed' && event.changes?.password !== undefined)
    return [credentialChange(user, 'password', 'update', initiator(event.by, event.id))];
  return [];
}

/** The Shared Signals events `event` makes, in the order a receiver should read them. */
export function signalsOf(event: BoxEvent): SignalDraft[] {
  const e = event.event;
  switch (e.event) {
    case 'session_closed':
      return sessionsRevoked(event.facts.closed ?? [], e.how);
    case 'factor':
      return factorChange(e);
    case 'session_strengthened':
      return assuranceLevelChange(e);
    case 'account':
      return accountTurned(e);
    case 'record_changed':
      return personChanged(e);
    default:
      return [];
  }
}
