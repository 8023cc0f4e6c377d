// DATABASE_URL in libpq's multi-host form, and which host target_session_attrs takes.
import { expect } from 'chai';
import pg from 'pg';
import { ConfigError, loadConfig } from '../../api/config.js';
import { serverState } from '../../api/db/locator.js';
import { fits, parseDatabaseUrl, pickHost, rewriteDatabaseUrl, TARGET_SESSION_ATTRS, type ServerState } from '../../api/database-url.js';

const primary: ServerState = { inRecovery: false, readOnly: false };
const standby: ServerState = { inRecovery: true, readOnly: true };
const readOnlyPrimary: ServerState = { inRecovery: false, readOnly: true };

describe('database URLs', function () {
  it('reads several hosts as libpq does, each with its port or 5432, and gives node-postgres one URL per host', function () {
    const url = parseDatabaseUrl(
      'postgres://box:s%40cret@db-1:5433,db-2,[::1]:6000/boxauth?sslmode=verify-full&target_session_attrs=primary',
    );
    expect(url.hosts).to.deep.equal([
      { host: 'db-1', port: 5433 },
      { host: 'db-2', port: 5432 },
      { host: '::1', port: 6000 },
    ]);
    expect(url.targetSessionAttrs).to.equal('primary');
    expect(url.where).to.equal('db-1:5433, db-2:5432, [::1]:6000');
    // What node-postgres reads of each: the same user, password, database and parameters, one host.
    const second = new pg.Client({ connectionString: url.forHost(url.hosts[1]!) });
    expect([second.host, second.port, second.user, second.password, second.database]).to.deep.equal([
      'db-2',
      5432,
      'box',
      's@cret',
      'boxauth',
    ]);
    expect(url.forHost(url.hosts[2]!)).to.equal('postgres://box:s%40cret@[::1]:6000/boxauth?sslmode=verify-full');
  });

  it('defaults to read-write (boxauth writes), where libpq defaults to any', function () {
    expect(parseDatabaseUrl('postgres://box@db/boxauth').targetSessionAttrs).to.equal('read-write');
    const single = parseDatabaseUrl('postgresql://box:pw@localhost:5432/boxauth?application_name=x');
    expect(single.hosts).to.deep.equal([{ host: 'localhost', port: 5432 }]);
    expect(single.forHost(single.hosts[0]!)).to.equal('postgresql://box:pw@localhost:5432/boxauth?application_name=x');
    expect(single.loadBalance).to.equal(false);
    expect(parseDatabaseUrl('postgres://a,b/db?load_balance_hosts=random').loadBalance).to.equal(true);
  });

  it('keeps a URL without a host (node-postgres then uses its defaults)', function () {
    const url = parseDatabaseUrl('postgres:///boxauth?host=/var/run/postgresql');
    expect(url.hosts).to.deep.equal([{ host: '', port: 5432 }]);
    expect(url.forHost(url.hosts[0]!)).to.equal('postgres:///boxauth?host=%2Fvar%2Frun%2Fpostgresql');
  });

  it('rewrites the credentials, the hosts (of one host or several alike) and the database (the operator writes box URLs from an administrative one)', function () {
    const admin = 'postgres://admin:a%2Fb@db-1:5432,db-2:5433/boxauth?sslmode=verify-full';
    expect(rewriteDatabaseUrl(admin, { user: 'box_x', password: 'p@ss:w/rd' })).to.equal(
      'postgres://box_x:p%40ss%3Aw%2Frd@db-1:5432,db-2:5433/boxauth?sslmode=verify-full',
    );
    expect(rewriteDatabaseUrl(admin, { user: 'box_x', password: 'p', hosts: 'pooler.ns.svc:5432' })).to.equal(
      'postgres://box_x:p@pooler.ns.svc:5432/boxauth?sslmode=verify-full',
    );
    expect(rewriteDatabaseUrl(admin, { user: 'box_x', password: 'p', database: 'box_0a1b' })).to.equal(
      'postgres://box_x:p@db-1:5432,db-2:5433/box_0a1b?sslmode=verify-full',
    );
    const parsed = parseDatabaseUrl(rewriteDatabaseUrl(admin, { user: 'box_x', password: 'p@ss' }));
    expect([parsed.user, parsed.database, parsed.where]).to.deep.equal(['box_x', 'boxauth', 'db-1:5432, db-2:5433']);
    expect(new pg.Client({ connectionString: parsed.forHost(parsed.hosts[0]!) }).password).to.equal('p@ss');
  });

  it('refuses rather than half understands', function () {
    const refused = (url: string) => () => parseDatabaseUrl(url);
    expect(refused('mysql://db/x')).to.throw(/postgres:\/\//);
    expect(refused('postgres://u@db-1,db-2/x?target_session_attrs=writable')).to.throw(/target_session_attrs must be one of/);
    expect(refused('postgres://u@db-1/x?host=a,b')).to.throw(/in the URL itself/);
    expect(refused('postgres://u@db-1/x?port=1,2')).to.throw(/in the URL itself/);
    expect(refused('postgres://u@db-1:99999/x')).to.throw(/not host, host:port/);
    expect(refused('postgres://u@db-1:5432,DB-1/x')).to.throw(/names DB-1:5432 twice/);
    expect(refused('postgres://u@db-1,,db-2/x')).to.throw(/"" is not host/);
    expect(refused('postgres://u@db/x?load_balance_hosts=roundrobin')).to.throw(/load_balance_hosts/);
  });

  it('the configuration takes only URLs that lead to a server accepting writes, and names the variable', function () {
    const two = 'postgres://u:p@db-1:5432,db-2:5432/boxauth';
    expect(loadConfig({ DATABASE_URL: two }).databaseUrl).to.equal(two);
    expect(loadConfig({ DATABASE_URL: `${two}?target_session_attrs=primary` }).databaseUrl).to.include('primary');
    for (const attrs of ['read-only', 'standby', 'prefer-standby']) {
      expect(() => loadConfig({ DATABASE_URL: `${two}?target_session_attrs=${attrs}` })).to.throw(
        ConfigError,
        /DATABASE_URL: boxauth writes/,
      );
    }
    expect(() => loadConfig({ DATABASE_URL: 'http://db' })).to.throw(ConfigError, /DATABASE_URL must be a postgres/);
    expect(() => loadConfig({ BOXAUTH_DATABASE_DIRECT_URL: two })).to.throw(ConfigError, /needs DATABASE_URL/);
    expect(() => loadConfig({ DATABASE_URL: two, BOXAUTH_DATABASE_DIRECT_URL: 'postgres://a?port=1,2' })).to.throw(
      ConfigError,
      /BOXAUTH_DATABASE_DIRECT_URL/,
    );
    const c = loadConfig({});
    expect([c.dbConnectTimeoutMs, c.dbStatementTimeoutMs, c.outageMemorySeconds]).to.deep.equal([3000, 5000, 60]);
  });

  it('a password that breaks the URL is a configuration error that says how to write it, and never shows it', function () {
    const secret = 's3cr';
    const urls = ['/t', '?t', '#t', '@t/x'].map((end) => `postgres://u:${secret}${end}@db:5432/x`);
    urls.push(`postgres://u%zz:${secret}@db/x`, `postgres://u:${secret}@db/x%zz`, `postgres://u:${secret}@db^:5432/x`);
    for (const url of urls) {
      let said = '';
      try {
        loadConfig({ DATABASE_URL: url });
      } catch (err) {
        expect(err).to.be.instanceOf(ConfigError);
        said = (err as Error).message;
      }
      expect(said, url).to.match(/^DATABASE_URL.*(percent-encoded|percent-encoding)/);
      expect(said, url).not.to.include(secret);
    }
    // Percent-encoded, it is taken.
    const encoded = encodeURIComponent('s3cr/?#@ t');
    expect(loadConfig({ DATABASE_URL: `postgres://u:${encoded}@db/x` }).databaseUrl).to.include(encoded);
  });
});

describe('target_session_attrs', function () {
  it('takes the servers libpq takes', function () {
    const table = Object.fromEntries(TARGET_SESSION_ATTRS.map((a) => [a, [primary, standby, readOnlyPrimary].map((s) => fits(a, s))]));
    expect(table).to.deep.equal({
      any: [true, true, true],
      'read-write': [true, false, false],
      'read-only': [false, true, true],
      primary: [true, false, true],
      standby: [false, true, false],
      'prefer-standby': [true, true, true],
    });
  });

  it('picks the first host that fits, in the order tried; prefer-standby takes a standby first, else any that answered', function () {
    const answers = [
      { host: 'down', state: undefined },
      { host: 'replica', state: standby },
      { host: 'main', state: primary },
    ];
    expect(pickHost('read-write', answers)).to.equal('main');
    expect(pickHost('any', answers)).to.equal('replica');
    expect(pickHost('prefer-standby', answers)).to.equal('replica');
    expect(pickHost('prefer-standby', [answers[0]!, answers[2]!])).to.equal('main');
    expect(pickHost('read-write', answers.slice(0, 2))).to.equal(undefined);
    expect(pickHost('any', [answers[0]!])).to.equal(undefined);
  });

  it('with two primaries (a split brain), writes go to the promoted one: the highest timeline, whatever the order', function () {
    const old = { host: 'old', state: { ...primary, timeline: 1 } };
    const promoted = { host: 'promoted', state: { ...primary, timeline: 2 } };
    for (const attrs of ['read-write', 'primary'] as const) {
      expect(pickHost(attrs, [old, promoted])).to.equal('promoted');
      expect(pickHost(attrs, [promoted, old])).to.equal('promoted');
    }
    // Ties, and any: the order tried.
    expect(pickHost('read-write', [old, { host: 'twin', state: { ...primary, timeline: 1 } }])).to.equal('old');
    expect(pickHost('any', [old, promoted])).to.equal('old');
  });

  it('asks a primary its timeline only to choose between hosts, and does without where the server cannot tell', async function () {
    const asked: string[] = [];
    const server = (walFunctions: boolean, recovery = false) => ({
      query: async (text: string) => {
        asked.push(text.includes('pg_walfile_name') ? 'timeline' : 'state');
        if (text.includes('pg_walfile_name')) {
          if (!walFunctions) throw new Error('Function pg_current_wal_lsn() is currently not supported');
          return { rows: [{ timeline: 3 }] };
        }
        return { rows: [{ recovery, read_only: recovery }] };
      },
    });
    const ask = (client: ReturnType<typeof server>, timeline: boolean) => serverState(client as unknown as pg.Client, timeline);
    expect(await ask(server(true), false)).to.deep.equal({ inRecovery: false, readOnly: false });
    expect(asked).to.deep.equal(['state']);
    expect(await ask(server(true), true)).to.deep.equal({ inRecovery: false, readOnly: false, timeline: 3 });
    expect(await ask(server(false), true)).to.deep.equal({ inRecovery: false, readOnly: false, timeline: undefined });
    asked.length = 0;
    expect(await ask(server(true, true), true)).to.deep.equal({ inRecovery: true, readOnly: true });
    expect(asked, 'a standby is not asked').to.deep.equal(['state']);
  });
});
