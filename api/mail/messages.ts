// What each kind of mail says, and to whom, decided when it is sent (not when it was asked
// for): the recipient is always the email a person's record holds at that moment, never an
// address someone typed, and a link's token is made here, so that the outbox row holds no
// secret. Only the token's SHA-256 is stored (account_links); the token is in the mail alone.
import { NO_BRANDING, type Branding } from '../branding.js';
import type { Queryable } from '../db/pool.js';
import { newOpaqueToken, tokenHash } from '../credentials/tokens.js';
import { sameAddress } from '../input.js';
import { insertLink, LINK_MINUTES, type LinkPurpose } from '../store/account-links.js';
import type { ClaimedMail, FactorDetail } from '../store/mail-outbox.js';
import { findUserByEmail, getUser, type UserRow } from '../store/users.js';
import { builtInMails, escapeHtml, named, render, type MailValue, type Templates } from './templates.js';
import type { Message } from './transport.js';

/** A mail to send, and the SHA-256 of its link's token (stored), if it has one. */
export interface Composed extends Message {
  linkHash?: Buffer;
}

/** The mail `mail` stands for, its link (if any) stored; undefined: there is no one to send it to. */
export async function compose(
  db: Queryable,
  mail: ClaimedMail,
  templates: Templates,
  baseUrl: string,
  branding: Pick<Branding, 'displayName' | 'supportUrl'> = NO_BRANDING,
): Promise<Composed | undefined> {
  // {{box}} is what people know the box as: the company's name where the box has one, else its host.
  // The addresses and the names of factors are names someone chose: render() isolates them.
  const box = branding.displayName ?? new URL(baseUrl).host;
  const filled = (values: Record<string, MailValue>): Omit<Message, 'to'> =>
    signed(render(templates.pick(mail.kind, mail.language), { box, supportLink: branding.supportUrl ?? '', ...values }), branding);
  let linkHash: Buffer | undefined;
  const to = (user: UserRow, values: Record<string, MailValue>): Composed => ({
    to: user.email,
    ...filled({ email: named(user.email), ...values }),
    ...(linkHash ? { linkHash } : {}),
  });
  const link = async (user: UserRow, purpose: LinkPurpose, page: string, sentTo = user.email): Promise<string> => {
    const token = newOpaqueToken();
    linkHash = tokenHash(token);
    await insertLink(db, {
      tokenHash: linkHash,
      purpose,
      userId: user.id,
      email: sentTo,
    });
    return `${baseUrl}${page}?token=${token}`;
  };
  switch (mail.kind) {
    case 'password-reset': {
      // Whoever holds the address now: nobody, and no mail (asking did the same work either way). A
      // person an IdentityProvider made signs in there: a password of the box would be a way in that
      // outlives the provider's (a person removed from the directory), so none is mailed. Nor to a
      // person turned off (SCIM active=false): a password set while off would wait for them.
      const user = await findUserByEmail(db, mail.address);
      if (!user?.passwordSet || !user.active) return undefined;
      const url = await link(user, 'reset', '/auth/reset/confirm');
      return to(user, { link: url, minutes: String(LINK_MINUTES.reset) });
    }
    case 'verify-email': {
      // Only while the address is still the person's and not yet verified: a changed address voids the
      // mail. Nor to a person turned off: turning them off voided their links, and makes none after.
      const user = mail.userId === undefined ? undefined : await getUser(db, mail.userId);
      if (!user?.active || user.emailVerified || !sameAddress(user.email, mail.address)) return undefined;
      const url = await link(user, 'verify', '/auth/verify-email');
      return to(user, { link: url, hours: String(LINK_MINUTES.verify / 60) });
    }
    case 'confirm-email-change': {
      // To the new address, typed by the person (checked as an address); not if it is theirs
      // already, or another account's by now: that holder is not asked to confirm anything. Nor for a
      // person turned off.
      const user = mail.userId === undefined ? undefined : await getUser(db, mail.userId);
      if (!user?.active || sameAddress(user.email, mail.address) || (await findUserByEmail(db, mail.address))) return undefined;
      const url = await link(user, 'change', '/auth/confirm-email', mail.address);
      return {
        to: mail.address,
        ...filled({
          email: named(mail.address),
          oldEmail: named(user.email),
          link: url,
          hours: String(LINK_MINUTES.change / 60),
        }),
        ...(linkHash ? { linkHash } : {}),
      };
    }
    case 'email-changed': {
      // To the address the record held before the change (from the record, in the change's
      // transaction), while the person has another one: a change undone meanwhile tells nobody.
      const user = mail.userId === undefined ? undefined : await getUser(db, mail.userId);
      if (!user || sameAddress(user.email, mail.address)) return undefined;
      return {
        to: mail.address,
        ...filled({ email: named(mail.address), newEmail: named(user.email) }),
      };
    }
    case 'factor-added':
    case 'factor-removed': {
      // To the person's address as their record holds it now: who changes how they sign in is told
      // where they read their mail, whatever address the change was made under.
      const user = mail.userId === undefined ? undefined : await getUser(db, mail.userId);
      if (!user) return undefined;
      return to(user, { factor: factorWords(mail.detail, mail.language), accountLink: `${baseUrl}/auth/account` });
    }
    case 'password-changed': {
      // To the address the record holds now, with the way to a reset: one who did not change it is
      // signed out everywhere, and the reset link goes to that same mailbox.
      const user = mail.userId === undefined ? undefined : await getUser(db, mail.userId);
      if (!user) return undefined;
      return to(user, { resetLink: `${baseUrl}/auth/reset` });
    }
    case 'already-registered': {
      const user = await findUserByEmail(db, mail.address);
      if (!user) return undefined;
      return to(user, { signInLink: `${baseUrl}/auth/sign-in`, resetLink: `${baseUrl}/auth/reset` });
    }
  }
}

/**
 * A branded box signs its mails, whatever the template: its name and, when it has one, where to
 * find help — a signature of no words, so it fits every language.
 */
export function signed(message: Omit<Message, 'to'>, branding: Pick<Branding, 'displayName' | 'supportUrl'>): Omit<Message, 'to'> {
  const { displayName: name, supportUrl: support } = branding;
  if (!name && !support) return message;
  const lines = [name, support].filter((l): l is string => !!l);
  return {
    ...message,
    text: `${message.text.replace(/\n*$/, '\n')}\n-- \n${lines.join('\n')}\n`,
    ...(message.html !== undefined
      ? {
          html: `${message.html}<p>— ${name ? escapeHtml(name) : ''}${support ? `${name ? '<br>' : ''}<a href="${escapeHtml(support)}">${escapeHtml(support)}</a>` : ''}</p>\n`,
        }
      : {}),
  };
}

/**
 * The words of a factor mail's `detail` in the mail's language ("a passkey named “Laptop”", "ein
 * Passkey namens „Laptop“"), the passkey's or the provider's name kept apart for render() to
 * isolate; a detail it cannot read is said plainly.
 */
export function factorWords(detail: string | undefined, language?: string): MailValue {
  let parsed: Partial<FactorDetail> = {};
  try {
    parsed = JSON.parse(detail ?? '{}') as Partial<FactorDetail>;
  } catch {
    // said plainly below
  }
  const words = builtInMails(language).factors;
  switch (parsed.factor) {
    case 'passkey':
      return typeof parsed.name === 'string' ? named(parsed.name, words.passkeyNamed) : words.passkey;
    case 'totp':
      return words.totp;
    case 'recovery-codes':
      return words.recoveryCodes;
    case 'every-factor':
      return words.everyFactor;
    case 'provider':
      return typeof parsed.name === 'string' ? named(parsed.name, words.providerNamed) : words.provider;
    default:
      return words.other;
  }
}
