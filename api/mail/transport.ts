// The SMTP server the box's mail goes through (BOXAUTH_SMTP_URL). One connection per mail,
// under a deadline: a server that answers slowly, or not at all, holds a send for at most
// `deadlineMs`, after which the connection is cut, so that no send left running delivers the
// mail after it was given up for a retry (a duplicate). `smtp://` must be upgraded with STARTTLS
// (nodemailer's requireTLS), except to a loopback host; `smtps://` is TLS from its first byte.
// The server's certificate is checked against Node's CAs, NODE_EXTRA_CA_CERTS included.
import { NO_BRANDING, type Branding } from '../branding.js';
import addressparser from 'nodemailer/lib/addressparser';
import type { SMTPConnectionOptions } from 'nodemailer/lib/smtp-connection';
import type { SmtpConfig } from '../config.js';
import { errorMessage } from '../errors.js';

export interface Message {
  to: string;
  subject: string;
  text: string;
  /** Absent: a text-only mail. */
  html?: string;
}

export interface Transport {
  /** Resolves once the server took the mail; rejects with a MailRefused (never retried) or another error (retried). */
  send(message: Message): Promise<void>;
}

/** A mail that must not be sent, whatever the retries: a recipient or subject that would be more than it says. */
export class MailRefused extends Error {}

/** 127.0.0.0/8, ::1 and localhost: where a mail in the clear never leaves the machine. */
export function isLoopback(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  return host === 'localhost' || host === '::1' || /^127(\.\d{1,3}){3}$/.test(host);
}

/** How long a send may take, and its parts, from the outbox's lease: half the lease, never past it. */
export function sendDeadlineMs(smtp: SmtpConfig): number {
  return Math.min(120_000, (smtp.leaseSeconds * 1000) / 2);
}

export function connectionOptions(smtp: SmtpConfig): SMTPConnectionOptions {
  const url = new URL(smtp.url);
  const secure = url.protocol === 'smtps:';
  const deadline = sendDeadlineMs(smtp);
  return {
    host: url.hostname.replace(/^\[|\]$/g, ''),
    port: Number(url.port || (secure ? 465 : 587)),
    secure,
    // Mail to a loopback host never crosses a network (a relay on the node, a test's server): STARTTLS when offered.
    requireTLS: !secure && !isLoopback(url.hostname),
    connectionTimeout: Math.min(10_000, deadline / 3),
    greetingTimeout: Math.min(10_000, deadline / 3),
    socketTimeout: Math.min(30_000, deadline / 2),
    dnsTimeout: Math.min(10_000, deadline / 3),
    socketCloseTimeout: 0,
    logger: false,
  };
}

/**
 * The one address `address` is, refused when it is more: a line break (a header of its own), or
 * what nodemailer's parser reads as another address or several (`a@x, b@y`, `a@x\r\nBcc: b@y`).
 * The recipient of every mail is a stored email already; this is the defence behind that.
 */
export function singleRecipient(address: string): string {
  if (/[\r\n\0]/.test(address)) throw new MailRefused('the recipient holds a line break');
  const parsed = addressparser(address, { flatten: true });
  if (parsed.length !== 1 || parsed[0]!.address !== address.trim() || !/^[^\s@<>,;"]+@[^\s@<>,;"]+$/.test(address.trim()))
    throw new MailRefused('the recipient is not exactly one address');
  return address.trim();
}

/** The subject as one header line. */
export function singleLine(subject: string): string {
  if (/[\r\n\0]/.test(subject)) throw new MailRefused('the subject holds a line break');
  return subject;
}

/** What an error may say in a log line or in the outbox's last_error: never the password. */
export function withoutSecret(message: string, smtp: SmtpConfig): string {
  const password = smtp.password;
  if (!password) return message;
  const user = decodeURIComponent(new URL(smtp.url).username);
  const forms = [
    password,
    encodeURIComponent(password),
    Buffer.from(`\0${user}\0${password}`).toString('base64'),
    Buffer.from(password).toString('base64'),
  ];
  return forms.reduce((m, form) => m.split(form).join('[redacted]'), message);
}

/**
 * `branding`: its display name, when it has one, is the name of the mails' sender (the address
 * stays BOXAUTH_SMTP_FROM's), so that a mail is from the company people know.
 */
export function smtpTransport(smtp: SmtpConfig, branding: Pick<Branding, 'displayName'> = NO_BRANDING): Transport {
  const options = connectionOptions(smtp);
  const from = addressparser(smtp.from, { flatten: true })[0]!.address;
  const user = decodeURIComponent(new URL(smtp.url).username);
  return {
    async send(message) {
      const to = singleRecipient(message.to);
      const subject = singleLine(message.subject);
      // Loaded at the first mail: a box without BOXAUTH_SMTP_URL never needs them (nor does its start).
      const [{ default: MailComposer }, { default: SMTPConnection }] = await Promise.all([
        import('nodemailer/lib/mail-composer'),
        import('nodemailer/lib/smtp-connection'),
      ]);
      const raw = await new MailComposer({
        // An address object: nodemailer encodes the name (RFC 2047), the branding checked it has no control character.
        from: branding.displayName ? { name: branding.displayName, address: from } : smtp.from,
        to,
        subject,
        text: message.text,
        ...(message.html !== undefined ? { html: message.html } : {}),
        disableFileAccess: true,
        disableUrlAccess: true,
      })
        .compile()
        .build();
      const connection = new SMTPConnection(options);
      // nodemailer reports a broken connection as an event, not to the step waiting for an answer.
      const broken = new Promise<never>((_, reject) => {
        connection.on('error', reject);
        connection.on('end', () => reject(new Error('the SMTP server closed the connection')));
      });
      broken.catch(() => undefined);
      const step = (run: (done: (err?: Error | null) => void) => void): Promise<void> =>
        Promise.race([new Promise<void>((resolve, reject) => run((err) => (err ? reject(err) : resolve()))), broken]);
      try {
        await withDeadline(
          sendDeadlineMs(smtp),
          () => connection.close(),
          async () => {
            await step((done) => connection.connect(done));
            if (user)
              await step((done) => connection.login({ user, ...(smtp.password !== undefined ? { pass: smtp.password } : {}) }, done));
            // The envelope is the checked address alone: nothing in the message's headers adds a recipient.
            await step((done) =>
              connection.send({ from, to: [to] }, raw, (err, info) =>
                done(err ?? (info?.rejected?.length ? new Error('the SMTP server refused the recipient') : null)),
              ),
            );
          },
        );
        connection.quit();
      } catch (err) {
        connection.close();
        throw new Error(withoutSecret(errorMessage(err), smtp));
      }
    },
  };
}

async function withDeadline<T>(ms: number, cut: () => void, work: () => Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      cut();
      reject(new Error(`no answer from the SMTP server within ${Math.round(ms / 1000)} s`));
    }, ms);
  });
  try {
    return await Promise.race([work(), late]);
  } finally {
    clearTimeout(timer);
  }
}
