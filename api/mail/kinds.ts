// The kinds of mail the box sends, each declared once: the placeholders its templates may name,
// and how it is composed when it is sent. Every list of kinds is made from this one: `MailKind`,
// `MAIL_KINDS`, `PLACEHOLDERS`, the templates a language of ./mails-en.ts must have (a missing one
// is a type error), the files BOXAUTH_MAIL_TEMPLATES may hold (./templates.ts), and the tables of
// docs/guides/email.md (a unit test reads them against it). A new kind is one entry here, its
// template in each language of the mails, and its row in those two tables.
//
// A mail is decided when it is sent, not when it was asked for: the recipient is always the email
// a person's record holds at that moment, never an address someone typed, and a link's token is
// made then (./messages.ts compose), so that the outbox row holds no secret.
import { EMAIL_CODE_MINUTES, emailCodeHash, firstStepCodeHash, newEmailCode } from '../credentials/email-codes.js';
import type { Queryable } from '../db/pool.js';
import { sameAddress } from '../input.js';
import { putEmailCode } from '../store/factors.js';
import { putFirstStepCode } from '../store/first-step-codes.js';
import { LINK_MINUTES, type LinkPurpose } from '../store/account-links.js';
import { enqueueMail as enqueueOutboxMail, type ClaimedMail, type MailRequest } from '../store/mail-outbox.js';
import { findUserByEmail, getUser, type UserRow } from '../store/users.js';
import type { Message } from './transport.js';
import { named, type MailValue } from './values.js';

/** A mail to send, and the SHA-256 of its link's token (stored), if it has one. */
export interface Composed extends Message {
  linkHash?: Buffer;
}

/** What a kind's composer is handed for the mail it composes. */
export interface Composing<Own extends string> {
  db: Queryable;
  baseUrl: string;
  /** A link of `purpose` to `page` for `user`, its token's SHA-256 stored with the address it goes to (`sentTo`, theirs by default). */
  link(user: UserRow, purpose: LinkPurpose, page: string, sentTo?: string): Promise<string>;
  /**
   * The mail to `address`, which is its {{email}}, with the kind's own placeholders filled by
   * `values` ({{box}} and {{supportLink}} are the box's).
   */
  mailTo(address: string, values: Record<Own, MailValue>): Composed;
  /** The words of a factor mail's `detail` in the mail's language (./messages.ts factorWords). */
  factorWords(detail: string | undefined): MailValue;
  /** The box's factor key: what a code a mail carries is hashed with before it is stored (a sign-in code). */
  factorKey: Buffer;
}

/** A kind of mail: its own placeholders, and its composer. */
export interface MailKindDeclaration<Own extends string> {
  /** The placeholders it has beyond those of every mail ({{box}}, {{email}}, {{supportLink}}). */
  placeholders: readonly Own[];
  /** The mail `mail` stands for, its link (if any) stored; undefined: there is no one to send it to. */
  compose(mail: ClaimedMail, the: Composing<Own>): Promise<Composed | undefined>;
}

/** A kind, its composer typed by its placeholders: a value left out or one it does not declare is a type error. */
const kind = <const Own extends string>(declaration: MailKindDeclaration<Own>): MailKindDeclaration<Own> => declaration;

/** The person a mail for a person is about, as their record is now; undefined if it names none, or they are gone. */
const personOf = async (db: Queryable, mail: ClaimedMail): Promise<UserRow | undefined> =>
  mail.userId === undefined ? undefined : getUser(db, mail.userId);

/** A factor mail: to the person's address as their record holds it now, whatever address the change was made under. */
const factorChange = kind({
  placeholders: ['factor', 'accountLink'],
  async compose(mail, the) {
    // Who changes how they sign in is told where they read their mail.
    const user = await personOf(the.db, mail);
    if (!user) return undefined;
    return the.mailTo(user.email, { factor: the.factorWords(mail.detail), accountLink: `${the.baseUrl}/auth/account` });
  },
});

/**
 * What a sign-in code's mail is about (its `detail`): the factor, or (`firstStep`) a code instead
 * of a password (api/people/ways/email-first-step.ts), and the sign-in it was asked for (hex SHA-256).
 */
export type SignInCodeDetail = { factor: number; for: string } | { firstStep: true; for: string };

/**
 * Every kind, in the order the box lists them. Who asks for each, and whom it reaches, is in
 * docs/guides/email.md#what-mails-the-box-sends-and-when.
 */
export const MAIL_KIND_DECLARATIONS = {
  // To whoever holds `address` when it is sent (nobody: no mail), so that asking for one does the
  // same work whether or not the address has an account.
  'password-reset': kind({
    placeholders: ['link', 'minutes'],
    async compose(mail, the) {
      // A person an IdentityProvider made signs in there: a password of the box would be a way in
      // that outlives the provider's (a person removed from the directory), so none is mailed. Nor to
      // a person turned off (SCIM active=false): a password set while off would wait for them.
      const user = await findUserByEmail(the.db, mail.address);
      if (!user?.passwordSet || !user.active) return undefined;
      const link = await the.link(user, 'reset', '/auth/reset/confirm');
      return the.mailTo(user.email, { link, minutes: String(LINK_MINUTES.reset) });
    },
  }),
  // To `user` while `address` is still theirs and unverified.
  'verify-email': kind({
    placeholders: ['link', 'hours'],
    async compose(mail, the) {
      // A changed address voids the mail. Nor to a person turned off: turning them off voided their
      // links, and makes none after.
      const user = await personOf(the.db, mail);
      if (!user?.active || user.emailVerified || !sameAddress(user.email, mail.address)) return undefined;
      const link = await the.link(user, 'verify', '/auth/verify-email');
      return the.mailTo(user.email, { link, hours: String(LINK_MINUTES.verify / 60) });
    },
  }),
  // Tells the holder of an address that someone tried to sign up with it.
  'already-registered': kind({
    placeholders: ['signInLink', 'resetLink'],
    async compose(mail, the) {
      const user = await findUserByEmail(the.db, mail.address);
      if (!user) return undefined;
      return the.mailTo(user.email, { signInLink: `${the.baseUrl}/auth/sign-in`, resetLink: `${the.baseUrl}/auth/reset` });
    },
  }),
  // Tells the address `user` had (written in the change's transaction, from their record) that it
  // is theirs no more.
  'email-changed': kind({
    placeholders: ['newEmail'],
    async compose(mail, the) {
      // While the person has another address: a change undone meanwhile tells nobody.
      const user = await personOf(the.db, mail);
      if (!user || sameAddress(user.email, mail.address)) return undefined;
      return the.mailTo(mail.address, { newEmail: named(user.email) });
    },
  }),
  // Asks the holder of `address`, which `user` would like as theirs, to confirm it.
  'confirm-email-change': kind({
    placeholders: ['oldEmail', 'link', 'hours'],
    async compose(mail, the) {
      // To the new address, typed by the person (checked as an address); not if it is theirs
      // already, or another account's by now: that holder is not asked to confirm anything. Nor for
      // a person turned off.
      const user = await personOf(the.db, mail);
      if (!user?.active || sameAddress(user.email, mail.address) || (await findUserByEmail(the.db, mail.address))) return undefined;
      const link = await the.link(user, 'change', '/auth/confirm-email', mail.address);
      return the.mailTo(mail.address, { oldEmail: named(user.email), link, hours: String(LINK_MINUTES.change / 60) });
    },
  }),
  // Tell `user` that a way of theirs to sign in was added or removed (`detail` names which:
  // api/people/notices.ts).
  'factor-added': factorChange,
  'factor-removed': factorChange,
  // Tells `user` that their password was changed (by them, a reset, an administrator or their
  // directory).
  'password-changed': kind({
    placeholders: ['resetLink'],
    async compose(mail, the) {
      // With the way to a reset: one who did not change it is signed out everywhere, and the reset
      // link goes to that same mailbox.
      const user = await personOf(the.db, mail);
      if (!user) return undefined;
      return the.mailTo(user.email, { resetLink: `${the.baseUrl}/auth/reset` });
    },
  }),
  // A sign-in code (api/people/ways/email-code.ts), to `user`'s address as their record holds it,
  // while it is verified. The code is made now, its HMAC stored on the factor's row (replacing the
  // code before), so that the outbox row holds no secret; a factor gone meanwhile, or an address
  // changed while it was composed (api/store/factors.ts putEmailCode), gets no mail. A code instead
  // of a password (api/people/ways/email-first-step.ts) is kept in first_step_codes.
  'sign-in-code': kind({
    placeholders: ['code', 'minutes'],
    async compose(mail, the) {
      const user = await personOf(the.db, mail);
      const detail = JSON.parse(mail.detail ?? '{}') as Partial<{ factor: number; firstStep: true; for: string }>;
      if (!user?.active || !user.emailVerified || typeof detail.for !== 'string') return undefined;
      const code = newEmailCode();
      const expiresAt = new Date(Date.now() + EMAIL_CODE_MINUTES * 60_000);
      const codeFor = Buffer.from(detail.for, 'hex');
      if (detail.firstStep === true) {
        // Asked with the address typed on the sign-in page: to it only while it is still this person's, who still has no password.
        if (user.passwordSet || !sameAddress(user.email, mail.address)) return undefined;
        await putFirstStepCode(the.db, user.id, firstStepCodeHash(the.factorKey, user.id, code), expiresAt, codeFor);
      } else {
        if (typeof detail.factor !== 'number') return undefined;
        const hash = emailCodeHash(the.factorKey, detail.factor, code);
        if (!(await putEmailCode(the.db, detail.factor, user.id, user.email, hash, expiresAt, codeFor))) return undefined;
      }
      return the.mailTo(user.email, { code, minutes: String(EMAIL_CODE_MINUTES) });
    },
  }),
};

/** A kind of mail, as an outbox row names it. */
export type MailKind = keyof typeof MAIL_KIND_DECLARATIONS;

export const MAIL_KINDS = Object.keys(MAIL_KIND_DECLARATIONS) as readonly MailKind[];

/** Whether an outbox row's kind is one this release declares (a later release may write one it does not). */
export const isMailKind = (kind: string): kind is MailKind => Object.hasOwn(MAIL_KIND_DECLARATIONS, kind);

/**
 * The values a kind's template may name, as {{name}}: every mail's {{box}} (what people know the
 * box as) and {{email}} (its recipient), its own, and {{supportLink}} (the branding's, or empty).
 */
export const PLACEHOLDERS = Object.fromEntries(
  MAIL_KINDS.map((name): [MailKind, readonly string[]] => [
    name,
    ['box', 'email', ...MAIL_KIND_DECLARATIONS[name].placeholders, 'supportLink'],
  ]),
) as Record<MailKind, readonly string[]>;

/** A mail of a kind declared here, asked for in the transaction of what it tells (the outbox: store/mail-outbox.ts). */
export async function enqueueMail(db: Queryable, mail: MailRequest & { kind: MailKind }): Promise<void> {
  await enqueueOutboxMail(db, mail);
}
