// A mail of the outbox made into the message to send, as its kind declares (./kinds.ts), when it
// is sent: its link's token made here, so that the outbox row holds no secret. Only the token's
// SHA-256 is stored (account_links); the token is in the mail alone.
import { NO_BRANDING, type Branding } from '../branding.js';
import type { Queryable } from '../db/pool.js';
import { newOpaqueToken, tokenHash } from '../credentials/tokens.js';
import { insertLink } from '../store/account-links.js';
import type { ClaimedMail, FactorDetail } from '../store/mail-outbox.js';
import { mailLanguage } from './language.js';
import { isMailKind, MAIL_KIND_DECLARATIONS, type Composed, type MailKindDeclaration } from './kinds.js';
import { builtInMails, escapeHtml, render, type Templates } from './templates.js';
import type { Message } from './transport.js';
import { named, type MailValue } from './values.js';
import { FACTOR_KINDS, isFactorKind, RECOVERY_CODES } from '../factor-kinds.js';

/** The mail `mail` stands for, composed as its kind declares (./kinds.ts); undefined: there is no one to send it to. */
export async function compose(
  db: Queryable,
  mail: ClaimedMail,
  templates: Templates,
  baseUrl: string,
  factorKey: Buffer,
  branding: Pick<Branding, 'displayName' | 'supportUrl'> = NO_BRANDING,
): Promise<Composed | undefined> {
  // A kind this release does not declare has no words here: no one to send it to.
  if (!isMailKind(mail.kind)) return undefined;
  const kind = mail.kind;
  // {{box}} is what people know the box as: the company's name where the box has one, else its host.
  // The addresses and the names of factors are names someone chose: render() isolates them.
  const box = branding.displayName ?? new URL(baseUrl).host;
  let linkHash: Buffer | undefined;
  // Each kind's values are typed where it is declared; here, any kind's.
  const declaration: MailKindDeclaration<string> = MAIL_KIND_DECLARATIONS[kind];
  const language = await mailLanguage(db, mail);
  return declaration.compose(mail, {
    db,
    baseUrl,
    async link(user, purpose, page, sentTo = user.email) {
      const token = newOpaqueToken();
      linkHash = tokenHash(token);
      await insertLink(db, { tokenHash: linkHash, purpose, userId: user.id, email: sentTo });
      return `${baseUrl}${page}?token=${token}`;
    },
    mailTo: (address, values) => ({
      to: address,
      ...signed(
        render(templates.pick(kind, language), { box, supportLink: branding.supportUrl ?? '', email: named(address), ...values }),
        branding,
      ),
      ...(linkHash ? { linkHash } : {}),
    }),
    factorWords: (detail) => factorWords(detail, language),
    factorKey,
  });
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
  const mails = builtInMails(language);
  const words = mails.factors;
  const factor = parsed.factor;
  if (factor === FACTOR_KINDS.passkey.kind && typeof parsed.name === 'string') return named(parsed.name, words.passkeyNamed);
  // Every kind by the words it declares (api/factor-kinds.ts `mailWord`): a new kind needs no line here.
  if (factor !== undefined && isFactorKind(factor)) return mails.catalogue[FACTOR_KINDS[factor].mailWord];
  switch (factor) {
    case RECOVERY_CODES.kind:
      return words.recoveryCodes;
    case 'every-factor':
      return words.everyFactor;
    case 'provider':
      return typeof parsed.name === 'string' ? named(parsed.name, words.providerNamed) : words.provider;
    default:
      return words.other;
  }
}
