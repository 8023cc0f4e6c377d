import { expect } from 'chai';
import { ConfigError, loadConfig } from '../../api/config.js';
import { parseSearch } from '../../api/store/search.js';
import { redactUrl } from '../../api/log.js';

describe('configuration', function () {
  it('defaults as docs/reference/configuration.md says', function () {
    const c = loadConfig({});
    expect(c).to.include({
      port: 8080,
      baseUrl: 'http://localhost:8080',
      box: 'default',
      rootClientId: 'root',
      adminEmail: 'admin@localhost',
      registration: false,
      jwtAlg: 'ES256',
    });
    expect(c.databaseUrl).to.equal(undefined);
    expect(c.hsts).to.deep.equal({ maxAgeSeconds: 31_536_000, includeSubDomains: false });
    expect(loadConfig({ BOXAUTH_PORT: '9000' }).baseUrl).to.equal('http://localhost:9000');
    expect(loadConfig({ BOXAUTH_BASE_URL: 'https://auth.example/' }).baseUrl).to.equal('https://auth.example');
  });

  it('refuses bad values, naming the variable', function () {
    expect(() => loadConfig({ BOXAUTH_PORT: 'eighty' })).to.throw(ConfigError, /BOXAUTH_PORT/);
    expect(() => loadConfig({ BOXAUTH_REGISTRATION: 'maybe' })).to.throw(ConfigError, /BOXAUTH_REGISTRATION/);
    // A proven address before the first sign-in needs mail to prove it with.
    expect(() => loadConfig({ BOXAUTH_REGISTRATION_VERIFY: 'before-sign-in' })).to.throw(ConfigError, /BOXAUTH_SMTP_URL/);
    expect(() => loadConfig({ BOXAUTH_REGISTRATION_VERIFY: 'sometimes' })).to.throw(ConfigError, /BOXAUTH_REGISTRATION_VERIFY/);
    expect(loadConfig({}).registrationVerify).to.equal('after-sign-in');
    expect(() => loadConfig({ BOXAUTH_BASE_URL: 'ftp://x' })).to.throw(ConfigError, /BOXAUTH_BASE_URL/);
    expect(() => loadConfig({ DATABASE_URL: 'mysql://x' })).to.throw(ConfigError, /DATABASE_URL/);
    expect(() => loadConfig({ BOXAUTH_HSTS_MAX_AGE: '-1' })).to.throw(ConfigError, /BOXAUTH_HSTS_MAX_AGE/);
    expect(() => loadConfig({ BOXAUTH_HSTS_INCLUDE_SUBDOMAINS: 'sometimes' })).to.throw(ConfigError, /BOXAUTH_HSTS_INCLUDE_SUBDOMAINS/);
    expect(() => loadConfig({ BOXAUTH_LOG_LEVEL: 'loud' })).to.throw(
      ConfigError,
      /^BOXAUTH_LOG_LEVEL must be one of trace, debug, info, warn, error, fatal, silent, got "loud"$/,
    );
    expect(() => loadConfig({ BOXAUTH_HOST: 'not a host' })).to.throw(ConfigError, /BOXAUTH_HOST/);
    expect(() => loadConfig({ BOXAUTH_BOX: 'My Box' })).to.throw(ConfigError, /BOXAUTH_BOX/);
    // NIST SP 800-63B §5.1.1.2: never fewer than 8 characters; 64 is the most a box may ask.
    for (const bad of ['7', '65', 'twelve', '12.5'])
      expect(() => loadConfig({ BOXAUTH_PASSWORD_MIN_LENGTH: bad }), bad).to.throw(
        ConfigError,
        /BOXAUTH_PASSWORD_MIN_LENGTH must be an integer between 8 and 64/,
      );
    expect(loadConfig({}).passwordMinLength).to.equal(8);
    expect(loadConfig({ BOXAUTH_PASSWORD_MIN_LENGTH: '12' }).passwordMinLength).to.equal(12);
    expect(() => loadConfig({ BOXAUTH_ADMIN_EMAIL: 'admin' })).to.throw(ConfigError, /BOXAUTH_ADMIN_EMAIL must be an email address/);
    expect(() => loadConfig({ BOXAUTH_REGISTRATION_GROUP: ' users' })).to.throw(ConfigError, /BOXAUTH_REGISTRATION_GROUP/);
    for (const rows of ['0', 'lots', '1.5'])
      expect(() => loadConfig({ BOXAUTH_DECISION_MAX_ROWS: rows })).to.throw(ConfigError, /BOXAUTH_DECISION_MAX_ROWS/);
    expect(loadConfig({}).decisionMaxRows).to.equal(100_000);
    // Names people read hide nothing, as the API refuses them (api/input.ts invisibleProblem).
    expect(() => loadConfig({ BOXAUTH_ADMIN_EMAIL: 'ad\u200Bmin@example.com' })).to.throw(
      ConfigError,
      /^BOXAUTH_ADMIN_EMAIL holds a control or invisible character \(U\+200B\)$/,
    );
    expect(() => loadConfig({ BOXAUTH_REGISTRATION_GROUP: 'users\u001b[2J' })).to.throw(
      ConfigError,
      /BOXAUTH_REGISTRATION_GROUP holds a control/,
    );
    expect(loadConfig({ BOXAUTH_BOX: 'team-a/auth', BOXAUTH_HOST: '::', BOXAUTH_LOG_LEVEL: 'warn' })).to.deep.include({
      box: 'team-a/auth',
      host: '::',
      logLevel: 'warn',
    });
  });

  it('sign-up limits: per address and box-wide, each with its window, and the sign-up lane of argon2', function () {
    expect(loadConfig({})).to.include({
      signUpMaxPerAddress: 10,
      signUpAddressWindowSeconds: 3600,
      signUpMaxPerBox: 100,
      signUpBoxWindowSeconds: 600,
      signUpMaxWaiting: 4,
    });
    for (const name of [
      'BOXAUTH_SIGN_UP_MAX_PER_ADDRESS',
      'BOXAUTH_SIGN_UP_ADDRESS_WINDOW_SECONDS',
      'BOXAUTH_SIGN_UP_MAX_PER_BOX',
      'BOXAUTH_SIGN_UP_BOX_WINDOW_SECONDS',
    ]) {
      for (const bad of ['0', '-1', 'ten', '1.5']) expect(() => loadConfig({ [name]: bad }), `${name}=${bad}`).to.throw(ConfigError, name);
    }
    expect(() => loadConfig({ BOXAUTH_SIGN_UP_MAX_WAITING: '-1' })).to.throw(ConfigError, /BOXAUTH_SIGN_UP_MAX_WAITING/);
  });

  it('BOXAUTH_TRUSTED_PROXIES: addresses and CIDRs, anything else refused rather than trusted as something broader', function () {
    expect(loadConfig({ BOXAUTH_TRUSTED_PROXIES: '10.0.0.0/8, 127.0.0.1 fd00::/8,::1' }).trustedProxies).to.deep.equal([
      ['10.0.0.0', 8],
      ['127.0.0.1', 32],
      ['fd00::', 8],
      ['::1', 128],
    ]);
    for (const bad of [
      '10.0.0.0/8/16',
      '10.0.0.0/',
      '10.0.0.0/33',
      'fd00::/129',
      '10.0.0.0/-1',
      '10.0.0.0/8.5',
      'proxy.example',
      '10.0.0.0/0x8',
    ]) {
      expect(() => loadConfig({ BOXAUTH_TRUSTED_PROXIES: bad }), bad).to.throw(ConfigError, /BOXAUTH_TRUSTED_PROXIES/);
    }
  });
});

describe('search parameters', function () {
  it('parses paging, sorting and filters, and refuses nonsense', function () {
    expect(parseSearch({ _count: '5', _page: '2', _sort: '-start,id', type: 'x', client: ['a', 'b'], access_token: 't' })).to.deep.equal({
      count: 5,
      page: 2,
      filters: [
        { field: 'type', values: ['x'] },
        { field: 'client', values: ['a', 'b'] },
      ],
      sort: [
        { field: 'start', desc: true },
        { field: 'id', desc: false },
      ],
    });
    expect(() => parseSearch({ _count: '5000' })).to.throw(/_count/);
    expect(() => parseSearch({ 'a;drop': 'x' })).to.throw(/unknown search parameter/);
  });
});

describe('log redaction', function () {
  it('hides credential query values', function () {
    expect(redactUrl('/users?access_token=abc&x=1')).to.equal('/users?access_token=[redacted]&x=1');
    expect(redactUrl('/cb?code=abc&state=s')).to.equal('/cb?code=[redacted]&state=[redacted]');
  });
});

describe('SMTP configuration', function () {
  it('SMTP: no URL, no mail; a URL needs a From; the password is kept apart from the URL and never echoed', function () {
    expect(loadConfig({}).smtp).to.equal(undefined);
    expect(
      loadConfig({ BOXAUTH_SMTP_URL: 'smtp://mailer:pa%2Fss@mail.example.com:587', BOXAUTH_SMTP_FROM: 'boxauth <no-reply@example.com>' })
        .smtp,
    ).to.deep.equal({
      url: 'smtp://mailer@mail.example.com:587',
      from: 'boxauth <no-reply@example.com>',
      password: 'pa/ss',
      leaseSeconds: 300,
      signInCodes: 'off',
    });
    expect(
      loadConfig({
        BOXAUTH_SMTP_URL: 'smtps://mailer:old@mail.example.com',
        BOXAUTH_SMTP_FROM: 'a@example.com',
        BOXAUTH_SMTP_PASSWORD: 'new',
      }).smtp,
    ).to.include({ url: 'smtps://mailer@mail.example.com', password: 'new' });
    const refused = (env: Record<string, string>, message: RegExp): void => {
      let error: unknown;
      try {
        loadConfig(env);
      } catch (err) {
        error = err;
      }
      expect(error, JSON.stringify(env)).to.be.instanceOf(ConfigError);
      expect((error as Error).message)
        .to.match(message)
        .and.not.to.include('hunter2');
    };
    const from = { BOXAUTH_SMTP_FROM: 'a@example.com' };
    refused({ BOXAUTH_SMTP_URL: 'smtp://u:hunter2@mail.example.com' }, /^BOXAUTH_SMTP_FROM is needed with BOXAUTH_SMTP_URL/);
    refused(
      { BOXAUTH_SMTP_URL: 'http://u:hunter2@mail.example.com', ...from },
      /^BOXAUTH_SMTP_URL must be smtp:\/\/.*got "http:\/\/u@mail\.example\.com"$/,
    );
    refused({ BOXAUTH_SMTP_URL: 'smtp://u:hunter2@mail.example.com:99999', ...from }, /^BOXAUTH_SMTP_URL must be smtp:\/\//);
    refused({ BOXAUTH_SMTP_URL: 'smtp://u:hunter2@mail.example.com/x?y', ...from }, /^BOXAUTH_SMTP_URL must be/);
    refused({ BOXAUTH_SMTP_URL: 'smtp://mail.example.com', BOXAUTH_SMTP_PASSWORD: 'hunter2', ...from }, /names no user for its password/);
    refused({ BOXAUTH_SMTP_FROM: 'a@example.com' }, /need BOXAUTH_SMTP_URL/);
    // Codes by email are offered only with mail to send them, and only when turned on (a new kind: expand, then offer).
    refused({ BOXAUTH_SMTP_SIGN_IN_CODES: 'true' }, /BOXAUTH_SMTP_SIGN_IN_CODES need BOXAUTH_SMTP_URL/);
    const mailing = { BOXAUTH_SMTP_URL: 'smtp://mail.example.com', ...from };
    const codes = (value: string) => loadConfig({ ...mailing, BOXAUTH_SMTP_SIGN_IN_CODES: value }).smtp?.signInCodes;
    expect(codes('second-factor')).to.equal('second-factor');
    expect(codes('off')).to.equal('off');
    expect(codes('first-step')).to.equal('first-step');
    // What the setting said before it was a list (never released, but written on main's boxes).
    expect(codes('true')).to.equal('second-factor');
    expect(codes('FALSE')).to.equal('off');
    refused(
      { ...mailing, BOXAUTH_SMTP_SIGN_IN_CODES: 'yes please' },
      /BOXAUTH_SMTP_SIGN_IN_CODES must be one of off, second-factor, first-step/,
    );
    for (const bad of ['a@example.com\r\nBcc: evil@x', 'a@example.com, b@example.com', 'no address', 'boxauth <>'])
      refused({ BOXAUTH_SMTP_URL: 'smtp://mail.example.com', BOXAUTH_SMTP_FROM: bad }, /^BOXAUTH_SMTP_FROM must be/);
    refused(
      { BOXAUTH_SMTP_URL: 'smtp://mail.example.com', ...from, BOXAUTH_MAIL_TEMPLATES: '/no/such/dir' },
      /BOXAUTH_MAIL_TEMPLATES: \/no\/such\/dir is not a directory/,
    );
    refused({ BOXAUTH_SMTP_URL: 'smtp://mail.example.com', ...from, BOXAUTH_MAIL_LEASE_SECONDS: '1' }, /BOXAUTH_MAIL_LEASE_SECONDS/);
  });

  it('traces: off unless OTEL_TRACES_EXPORTER=otlp, the standard OTEL_* variables read as the SDK reads them', function () {
    expect(loadConfig({}).tracing).to.deep.include({
      exporter: 'none',
      sampler: 'parentbased_always_on',
      ratio: 1,
      serviceName: 'boxauth',
    });
    const on = loadConfig({
      OTEL_TRACES_EXPORTER: 'otlp',
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.01',
      OTEL_SERVICE_NAME: 'auth',
    }).tracing;
    expect(on).to.deep.equal({
      exporter: 'otlp',
      endpoint: 'http://collector:4318/v1/traces',
      sampler: 'parentbased_traceidratio',
      ratio: 0.01,
      serviceName: 'auth',
    });
    expect(
      loadConfig({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://c.example/t' }).tracing.endpoint,
    ).to.equal('https://c.example/t');
    expect(loadConfig({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_SDK_DISABLED: 'true' }).tracing.exporter).to.equal('none');
    expect(() => loadConfig({ OTEL_TRACES_EXPORTER: 'zipkin' })).to.throw(ConfigError, /OTEL_TRACES_EXPORTER/);
    expect(() => loadConfig({ OTEL_TRACES_SAMPLER: 'sometimes' })).to.throw(ConfigError, /OTEL_TRACES_SAMPLER/);
    expect(() => loadConfig({ OTEL_TRACES_SAMPLER_ARG: '2' })).to.throw(ConfigError, /OTEL_TRACES_SAMPLER_ARG/);
    expect(() => loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' })).to.throw(ConfigError, /OTEL_EXPORTER_OTLP_ENDPOINT/);
  });
});
