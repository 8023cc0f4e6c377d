// A real SMTP server for tests (smtp-server), on 127.0.0.1: STARTTLS with a certificate of a
// test CA (test/support/tls.ts), AUTH with a user and password it checks (only once the
// connection is TLS: smtp-server refuses AUTH in the clear), and every mail parsed (mailparser)
// and kept. A test switches its mode: `stopped` (its port refuses connections), `slow` (each
// answer waits), `failing` (451 to every MAIL FROM). A server started `plaintext` offers no
// STARTTLS and takes AUTH in the clear: what a box must refuse to send to, but on a loopback host.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer, type SMTPServerSession } from 'smtp-server';
import { testCa, type TestCa } from './tls.js';

export interface ReceivedMail {
  /** The envelope: MAIL FROM and every RCPT TO. */
  from: string;
  to: string[];
  /** The session was upgraded to TLS (STARTTLS) and authenticated as this user. */
  secure: boolean;
  user: string | undefined;
  parsed: ParsedMail;
}

export type SmtpMode = { kind: 'up' } | { kind: 'stopped' } | { kind: 'slow'; seconds: number } | { kind: 'failing' };

export class TestSmtp {
  readonly received: ReceivedMail[] = [];
  /** Connections accepted and MAIL FROM commands seen (failed ones too). */
  connections = 0;
  attempts = 0;
  private server: SMTPServer | undefined;
  private mode: SmtpMode = { kind: 'up' };
  private readonly waiters = new Set<() => void>();

  /** Its own port 0 at the first listen, read back; the same port when it listens again after 'stopped'. */
  private listenPort = 0;

  get port(): number {
    return this.listenPort;
  }

  private constructor(
    readonly user: string,
    readonly password: string,
    readonly ca: TestCa,
    private readonly cert: { certFile: string; keyFile: string },
    readonly host: string,
    private readonly plaintext: boolean,
  ) {}

  static async start(ca: TestCa = testCa(), options: { host?: string; plaintext?: boolean } = {}): Promise<TestSmtp> {
    const password = `pw-${randomBytes(9).toString('hex')}`;
    const smtp = new TestSmtp('boxauth', password, ca, ca.issue('smtp'), options.host ?? '127.0.0.1', options.plaintext ?? false);
    await smtp.listen();
    return smtp;
  }

  /** The environment that makes a box send here: the URL (with the password), the From, and trust in the CA. */
  boxEnv(extra: { password?: 'url' | 'env' } = {}): Record<string, string> {
    const inUrl = extra.password !== 'env';
    return {
      BOXAUTH_SMTP_URL: `smtp://${this.user}${inUrl ? `:${encodeURIComponent(this.password)}` : ''}@${this.host}:${this.port}`,
      ...(inUrl ? {} : { BOXAUTH_SMTP_PASSWORD: this.password }),
      BOXAUTH_SMTP_FROM: 'boxauth <no-reply@box.test>',
      NODE_EXTRA_CA_CERTS: this.ca.caFile,
    };
  }

  async setMode(mode: SmtpMode): Promise<void> {
    const wasStopped = this.mode.kind === 'stopped';
    this.mode = mode;
    if (mode.kind === 'stopped' && !wasStopped) await this.close();
    if (mode.kind !== 'stopped' && wasStopped) await this.listen();
  }

  /** The first mail received (already, or within `timeoutMs`) that `predicate` accepts. */
  async waitForMail(predicate: (mail: ReceivedMail) => boolean = () => true, timeoutMs = 30_000): Promise<ReceivedMail> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.received.find(predicate);
      if (found) return found;
      const left = deadline - Date.now();
      if (left <= 0)
        throw new Error(
          `no such mail within ${timeoutMs} ms (received: ${this.received.map((m) => `${m.to.join(',')}: ${m.parsed.subject}`).join('; ') || 'none'})`,
        );
      await new Promise<void>((resolve) => {
        const done = (): void => {
          clearTimeout(timer);
          this.waiters.delete(done);
          resolve();
        };
        const timer = setTimeout(done, left);
        this.waiters.add(done);
      });
    }
  }

  /** Mails to `address` (its envelope). */
  mailsTo(address: string): ReceivedMail[] {
    return this.received.filter((m) => m.to.includes(address));
  }

  async stop(): Promise<void> {
    this.mode = { kind: 'stopped' };
    await this.close();
  }

  private delay(callback: (err?: Error | null) => void, err?: Error): void {
    const wait = this.mode.kind === 'slow' ? this.mode.seconds * 1000 : 0;
    setTimeout(() => callback(err ?? null), wait);
  }

  private listen(): Promise<void> {
    const server = new SMTPServer({
      key: fs.readFileSync(this.cert.keyFile),
      cert: fs.readFileSync(this.cert.certFile),
      authMethods: ['PLAIN', 'LOGIN'],
      logger: false,
      disableReverseLookup: true,
      ...(this.plaintext ? { disabledCommands: ['STARTTLS'] } : {}),
      allowInsecureAuth: this.plaintext,
      closeTimeout: 1000,
      onConnect: (_session, callback) => {
        this.connections++;
        this.delay(callback);
      },
      onAuth: (auth, _session, callback) => {
        const ok = auth.username === this.user && auth.password === this.password;
        this.delay(
          (err) => callback(err, ok ? { user: auth.username } : undefined),
          ok ? undefined : new Error('Invalid username or password'),
        );
      },
      onMailFrom: (_address, session, callback) => {
        this.attempts++;
        if (!session.user) return callback(Object.assign(new Error('authentication required'), { responseCode: 530 }));
        if (this.mode.kind === 'failing') return callback(Object.assign(new Error('try again later'), { responseCode: 451 }));
        this.delay(callback);
      },
      onRcptTo: (_address, _session, callback) => this.delay(callback),
      onData: (stream, session, callback) => {
        simpleParser(stream).then(
          (parsed) => {
            this.delay((err) => {
              if (!err) this.record(session, parsed);
              callback(err);
            });
          },
          (err: Error) => callback(err),
        );
      },
    });
    server.on('error', () => undefined);
    this.server = server;
    return new Promise((resolve, reject) => {
      server.server.once('error', reject);
      server.listen(this.listenPort, this.host, () => {
        this.listenPort = (server.server.address() as AddressInfo).port;
        resolve();
      });
    });
  }

  private record(session: SMTPServerSession, parsed: ParsedMail): void {
    this.received.push({
      from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
      to: session.envelope.rcptTo.map((r) => r.address),
      secure: session.secure,
      user: typeof session.user === 'string' ? session.user : undefined,
      parsed,
    });
    for (const wake of [...this.waiters]) wake();
  }

  private close(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    if (!server) return Promise.resolve();
    return new Promise((resolve) => server.close(() => resolve()));
  }
}
