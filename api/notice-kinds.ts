// The kinds of notice the box sends out of it (api/notices/), by name: where a kind is added. Its
// name goes in api/notices/kinds.ts NOTICE_KIND_NAMES, the floor the kinds, the outbox and its
// store share; the type below holds this table to that list (a name without its kind, or a kind
// without a name, does not compile). The server starts every kind from here, and
// test/unit/notices/kinds.test.ts holds the table of docs/operations/notices.md to it.
import { NOTICE_KIND_NAMES, type NoticeKind, type NoticeKindName } from './notices/kinds.js';
import { backchannelLogoutKind } from './oauth/backchannel-logout.js';
import { samlLogoutKind } from './saml/logout-notices.js';
import type { Services } from './services.js';
import { ssfKind } from './ssf/kind.js';
import { webhookKind } from './webhooks/kind.js';

/** Each kind of notice, made from the services of a process. */
export const NOTICE_KINDS: { readonly [Name in NoticeKindName]: (svc: Services) => NoticeKind } = {
  backchannel: backchannelLogoutKind,
  'saml-logout': samlLogoutKind,
  ssf: ssfKind,
  webhook: webhookKind,
};

/** Every kind of notice, made for this process, by name: what its outbox carries (api/notices/outbox.ts startNotices). */
export function noticeKinds(svc: Services): ReadonlyMap<NoticeKindName, NoticeKind> {
  return new Map(NOTICE_KIND_NAMES.map((name) => [name, NOTICE_KINDS[name](svc)]));
}
