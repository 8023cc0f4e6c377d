import { expect } from 'chai';
import { loadConfig, type SmtpConfig } from '../../../api/config.js';
import { connectionOptions, isLoopback, MailRefused, singleLine, singleRecipient, withoutSecret } from '../../../api/mail/transport.js';
import { retryDelaySeconds } from '../../../api/mail/outbox.js';

const smtp = (url: string, env: Record<string, string> = {}): SmtpConfig =>
  loadConfig({ BOXAUTH_SMTP_URL: url, BOXAUTH_SMTP_FROM: 'no-reply@example.com', ...env }).smtp!;

describe('the SMTP transport', function () {
  it('requires STARTTLS on smtp:// except to a loopback host; smtps:// is TLS from the start', function () {
    expect(connectionOptions(smtp('smtp://u:p@mail.example.com:587'))).to.include({
      host: 'mail.example.com',
      port: 587,
      secure: false,
      requireTLS: true,
    });
    expect(connectionOptions(smtp('smtp://mail.example.com'))).to.include({ port: 587, requireTLS: true });
    expect(connectionOptions(smtp('smtps://u:p@mail.example.com'))).to.include({ port: 465, secure: true, requireTLS: false });
    for (const host of ['127.0.0.1', 'localhost', '[::1]', '127.3.2.1']) {
      expect(connectionOptions(smtp(`smtp://${host}:2525`)).requireTLS, host).to.equal(false);
    }
    expect(isLoopback('127.example.com')).to.equal(false);
    expect(isLoopback('10.0.0.1')).to.equal(false);
  });

  it('bounds a send: every timeout within half the lease', function () {
    const o = connectionOptions(smtp('smtp://mail.example.com', { BOXAUTH_MAIL_LEASE_SECONDS: '6' }));
    for (const t of [o.connectionTimeout, o.greetingTimeout, o.socketTimeout, o.dnsTimeout])
      expect(t).to.be.at.most(3000).and.greaterThan(0);
    const d = connectionOptions(smtp('smtp://mail.example.com'));
    expect(d).to.include({ connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 30_000 });
  });

  it('refuses a recipient that is more than one address, and a subject of more than one line', function () {
    expect(singleRecipient('ann@example.com')).to.equal('ann@example.com');
    for (const bad of [
      'ann@example.com\r\nBcc: evil@x',
      'ann@example.com\nBcc: evil@x',
      'ann@example.com, evil@x',
      'ann@example.com;evil@x',
      'Ann <evil@x>',
      'evil@x (ann@example.com)',
      'no-at-sign',
      '"a@b"@c',
    ])
      expect(() => singleRecipient(bad), JSON.stringify(bad)).to.throw(MailRefused);
    expect(singleLine('Reset your password')).to.equal('Reset your password');
    expect(() => singleLine('Hi\r\nBcc: evil@x')).to.throw(MailRefused);
  });

  it('takes the password out of what an error says, in each form it may take', function () {
    const c = smtp('smtp://mailer:s3cr%40t@mail.example.com');
    expect(c.password).to.equal('s3cr@t');
    const said = `auth failed for s3cr@t / s3cr%40t / ${Buffer.from('\0mailer\0s3cr@t').toString('base64')}`;
    expect(withoutSecret(said, c)).to.equal('auth failed for [redacted] / [redacted] / [redacted]');
  });

  it('backs off from 5 s, doubling, up to an hour', function () {
    expect([1, 2, 3, 4, 10, 50].map(retryDelaySeconds)).to.deep.equal([5, 10, 20, 40, 2560, 3600]);
  });
});
