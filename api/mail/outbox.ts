// The sender of the mail outbox (api/store/mail-outbox.ts), in every process of a box that has
// mail configured. It wakes when a mail is enqueued (NOTIFY) and every few seconds anyway (a
// notification lost with a connection, a retry come due), claims due rows under a lease, and
// sends a few at once. Sent, or with no one to send to: the row goes. Failed: tried again later,
// backing off, until it is two days old; then given up, with an audit event. A process killed
// while sending holds its rows until their lease ends; then any process sends them: a mail the
// box accepted is sent at least once, and a second time only if a process died after the server
// took it and before the row was deleted.
import type { Branding } from '../branding.js';
import type { Audit } from '../audit.js';
import type { SmtpConfig } from '../config.js';
import type { ChangeFeed } from '../db/notify.js';
import { withTransaction, type Pool } from '../db/pool.js';
import { errorMessage } from '../errors.js';
import { LeasedSends } from '../leased-sends.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import { claimMail, countMail, MAIL_CHANNEL, retryMail, sentMail, type ClaimedMail } from '../store/mail-outbox.js';
import { deleteLink } from '../store/account-links.js';
import type { Composed } from './kinds.js';
import { compose } from './messages.js';
import { Templates } from './templates.js';
import { MailRefused, smtpTransport, withoutSecret, type Transport } from './transport.js';

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
interface Needs {
  config: { baseUrl: string; branding: Branding };
  pool: Pool;
  feed: ChangeFeed;
  log: Logger;
  audit: Audit;
  metrics: Metrics;
  /** A sign-in code's mail stores the code's HMAC under it (./kinds.ts). */
  factorKey: Buffer;
}

/** Mails one process sends at once: a slow server holds these, never a request. */
const SENDING_AT_ONCE = 3;
const POLL_MS = 3000;
const FIRST_RETRY_SECONDS = 5;
const LONGEST_RETRY_SECONDS = 3600;
export const GIVE_UP_AFTER_MS = 2 * 24 * 3600 * 1000;

/** Seconds to wait after the `attempts`th attempt failed: 5 s, 10 s, 20 s, … up to an hour. */
export function retryDelaySeconds(attempts: number): number {
  return Math.min(LONGEST_RETRY_SECONDS, FIRST_RETRY_SECONDS * 2 ** Math.min(20, Math.max(0, attempts - 1)));
}

export class Outbox {
  private readonly sends: LeasedSends<ClaimedMail>;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly svc: Needs,
    private readonly smtp: SmtpConfig,
    private readonly transport: Transport,
    private readonly templates: Templates,
  ) {
    this.sends = new LeasedSends(
      SENDING_AT_ONCE,
      (free) => claimMail(svc.pool, free, smtp.leaseSeconds),
      (mail) => this.deliver(mail),
      (err) => svc.log.warn({ err: errorMessage(err) }, 'the mail outbox could not be read; trying again'),
    );
  }

  start(): void {
    this.svc.feed.onNotice(MAIL_CHANNEL, () => this.wake());
    this.svc.feed.onReset(() => this.wake()); // notifications were lost while the feed was away
    this.timer = setInterval(() => {
      this.wake();
      countMail(this.svc.pool).then(
        (n) => this.svc.metrics.mailOutbox.set(n),
        () => undefined,
      );
    }, POLL_MS);
    this.timer.unref();
    this.wake();
  }

  /** Nothing new is claimed; sends in flight may finish within `waitMs` (LeasedSends.stop). */
  async stop(waitMs: number): Promise<void> {
    clearInterval(this.timer);
    await this.sends.stop(waitMs);
  }

  private wake(): void {
    this.sends.wake();
  }

  private async deliver(mail: ClaimedMail): Promise<void> {
    const { pool, log, metrics } = this.svc;
    let message: Composed | undefined;
    try {
      message = await compose(pool, mail, this.templates, this.svc.config.baseUrl, this.svc.factorKey, this.svc.config.branding);
      if (message) await this.transport.send(message);
      await sentMail(pool, mail);
      metrics.mails.inc({ kind: mail.kind, result: message ? 'sent' : 'no-recipient' });
      log.info(
        { mail: mail.id, kind: mail.kind, attempts: mail.attempts, sent: message !== undefined },
        message ? 'mail sent' : 'mail has no one to go to',
      );
    } catch (err) {
      // A link no mail carries opens nothing, but need not wait for its expiry; a retry makes another.
      if (message?.linkHash) await deleteLink(pool, message.linkHash).catch(() => undefined);
      const why = withoutSecret(errorMessage(err), this.smtp);
      if (err instanceof MailRefused || Date.now() - mail.createdAt.getTime() >= GIVE_UP_AFTER_MS) {
        await this.giveUp(mail, why).catch((e: unknown) => log.error({ mail: mail.id, err: errorMessage(e) }, 'giving up a mail failed'));
        return;
      }
      metrics.mails.inc({ kind: mail.kind, result: 'failed' });
      const delay = retryDelaySeconds(mail.attempts);
      log.warn(
        { mail: mail.id, kind: mail.kind, attempts: mail.attempts, retryInSeconds: delay, err: why },
        'sending a mail failed; it is tried again',
      );
      await retryMail(pool, mail, delay, why).catch(() => undefined); // not recorded: the lease ends, and it is tried then
    }
  }

  /** The mail taken out of the outbox with its audit event, in one transaction: neither without the other. */
  private async giveUp(mail: ClaimedMail, why: string): Promise<void> {
    this.svc.log.error({ mail: mail.id, kind: mail.kind, attempts: mail.attempts, err: why }, 'a mail was given up');
    await withTransaction(this.svc.pool, async (tx) => {
      await sentMail(tx, mail);
      await this.svc.audit.recordIn(tx, {
        event: 'account',
        action: 'mail-given-up',
        ...(mail.userId !== undefined ? { user: String(mail.userId) } : {}),
        email: mail.address,
        by: {},
      });
    });
    this.svc.metrics.mails.inc({ kind: mail.kind, result: 'given-up' });
  }
}

/** The outbox of this process, sending through `smtp`; a template that is wrong throws a ConfigError now. */
export function startOutbox(svc: Needs, smtp: SmtpConfig): Outbox {
  const outbox = new Outbox(svc, smtp, smtpTransport(smtp, svc.config.branding), Templates.load(smtp.templatesDir));
  outbox.start();
  return outbox;
}
