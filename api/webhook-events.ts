// The CloudEvents `type` of each event of the box a Webhook may subscribe to, and what it tells: the
// one list. `make generate` writes the Webhook CRD's allowed values from it (crds/webhook.yaml
// spec.events, and so api/schema/crd-types.ts and docs/reference/resources.md), and the table of
// types in docs/guides/sign-out-everywhere.md; api/webhooks/event-types.ts names each audit event
// by it. A type is `io.boxauth.<what>.<action>`: CloudEvents 1.0 §3.1.1 "SHOULD be prefixed with a
// reverse-DNS name"; Standard Webhooks "event types be formatted as an hierarchical, and full-stop
// delimited, list of identifiers [...] limited to a limited set of characters `[a-zA-Z0-9_]`", so
// the audit's `password-reset` is `password_reset`.
//
// Tied to the audit trail (api/audit.ts) by type: every event the trail keeps is a key here or
// named in NotOffered, and every key is the type of an event of the trail. A new action of the audit
// is a type error here until it has its line (or is said not to be offered).
import type { AuditEvent } from './audit.js';

/** An audit word as a type's: `password-reset` → `password_reset`. */
type Word<S extends string> = S extends `${infer A}-${infer B}` ? `${A}_${Word<B>}` : S;
type SignInAction<O> = O extends 'success' ? 'succeeded' : O extends 'failure' ? 'failed' : O;
type ChangedWhat<K> = K extends 'User' ? 'user' : K extends 'Group' ? 'group' : 'resource';

/** The type of each audit event, as api/webhooks/event-types.ts eventType names it. */
type TypeOf<E> = E extends { event: 'session_closed' }
  ? 'io.boxauth.session.closed'
  : E extends { event: 'session_strengthened' }
    ? 'io.boxauth.session.strengthened'
    : E extends { event: 'sign_in'; outcome: infer O }
      ? `io.boxauth.sign_in.${SignInAction<O> & string}`
      : E extends { event: 'decision' }
        ? 'io.boxauth.decision.refused'
        : E extends { event: 'record_changed'; kind: infer K; action: infer A extends string }
          ? `io.boxauth.${ChangedWhat<K>}.${A}`
          : E extends { event: infer N extends string; action: infer A extends string }
            ? `io.boxauth.${Word<N>}.${Word<A>}`
            : never;

/** Events of the trail no Webhook is offered: refusals of the box's own API, one caller's and every caller's (they are the audit's to count). */
type NotOffered = 'io.boxauth.api_refused.write' | 'io.boxauth.api_refused.read';

/** Every type a Webhook may subscribe to. */
export type WebhookEventType = Exclude<TypeOf<AuditEvent>, NotOffered>;

/**
 * Every type, in the order the CRD and the docs list them, with what it tells (a cell of the docs'
 * table: types of one `<what>` side by side that tell the same share a row).
 */
export const WEBHOOK_EVENTS = {
  'io.boxauth.session.closed':
    'sessions closed: sign-out, revoke, logout, an administrator, a password change or reset, a person turned off or deleted, … (`data.how` says why)',
  'io.boxauth.session.strengthened':
    "a signed-in browser's class of sign-in rose: a step-up, or a factor set up in it (`data.from`, `data.to`: `acr` and `amr` before and after)",
  'io.boxauth.sign_in.succeeded': 'a sign-in (refused ones of a known person, at most a few a second)',
  'io.boxauth.sign_in.failed': 'a sign-in (refused ones of a known person, at most a few a second)',
  'io.boxauth.sign_in.locked': 'a sign-in (refused ones of a known person, at most a few a second)',
  'io.boxauth.account.deactivated': "a person turned off or on (SCIM `active`, the REST API's `active`)",
  'io.boxauth.account.activated': "a person turned off or on (SCIM `active`, the REST API's `active`)",
  'io.boxauth.account.password_reset_requested': 'passwords',
  'io.boxauth.account.password_reset': 'passwords',
  'io.boxauth.account.password_changed': 'passwords',
  'io.boxauth.account.email_change_requested': 'addresses',
  'io.boxauth.account.email_changed': 'addresses',
  'io.boxauth.account.email_verified': 'addresses',
  'io.boxauth.account.email_vouched': 'addresses',
  'io.boxauth.account.email_unvouched': 'addresses',
  'io.boxauth.account.consent_withdrawn': 'consent withdrawn, a mail given up, an account adopted',
  'io.boxauth.account.mail_given_up': 'consent withdrawn, a mail given up, an account adopted',
  'io.boxauth.account.adopted': 'consent withdrawn, a mail given up, an account adopted',
  'io.boxauth.factor.enrolled': 'second factors',
  'io.boxauth.factor.removed': 'second factors',
  'io.boxauth.factor.reset': 'second factors',
  'io.boxauth.factor.recovery_code_used': 'second factors',
  'io.boxauth.factor.recovery_codes_made': 'second factors',
  'io.boxauth.upstream.created': 'sign-ins through an IdentityProvider',
  'io.boxauth.upstream.linked': 'sign-ins through an IdentityProvider',
  'io.boxauth.upstream.unlinked': 'sign-ins through an IdentityProvider',
  'io.boxauth.upstream.refused': 'sign-ins through an IdentityProvider',
  'io.boxauth.user.created': 'people (`data.changes`: before → after)',
  'io.boxauth.user.changed': 'people (`data.changes`: before → after)',
  'io.boxauth.user.deleted': 'people (`data.changes`: before → after)',
  'io.boxauth.group.created': 'groups',
  'io.boxauth.group.changed': 'groups',
  'io.boxauth.group.deleted': 'groups',
  'io.boxauth.resource.created': 'Clients, AccessPolicies, Apps, IdentityProviders, Webhooks, Hooks',
  'io.boxauth.resource.changed': 'Clients, AccessPolicies, Apps, IdentityProviders, Webhooks, Hooks',
  'io.boxauth.resource.deleted': 'Clients, AccessPolicies, Apps, IdentityProviders, Webhooks, Hooks',
  'io.boxauth.decision.refused': "a gateway's request refused",
  'io.boxauth.signing_key.rotated': "the box's signing keys",
  'io.boxauth.signing_key.dropped': "the box's signing keys",
  'io.boxauth.notice.given_up': 'a notice of the outbox given up (never sent to the Webhook it is about)',
} as const satisfies Record<WebhookEventType, string>;

/** Every type a Webhook may subscribe to, in the order the reference lists them. */
export const WEBHOOK_EVENT_TYPES = Object.keys(WEBHOOK_EVENTS) as readonly WebhookEventType[];
