import { expect } from 'chai';
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequestLogger, redactUrl } from '../../api/log.js';

describe('redactUrl', function () {
  it('replaces the values of credential parameters, keeps the rest of the URL as it came', function () {
    expect(redactUrl('/users?access_token=abc&_count=5&name=a%20b')).to.equal('/users?access_token=[redacted]&_count=5&name=a%20b');
    expect(redactUrl('/Client/x')).to.equal('/Client/x');
    expect(redactUrl('/Client?')).to.equal('/Client?');
    expect(redactUrl('/cb?flag&x=1')).to.equal('/cb?flag&x=1');
  });

  it('covers every credential-bearing name', function () {
    for (const name of [
      'access_token',
      'refresh_token',
      'code',
      'client_secret',
      'token',
      'state',
      'code_verifier',
      'device_code',
      'client_assertion',
      'id_token_hint',
      'id_token',
      'password',
      'assertion',
      'secret',
      'subject_token',
      'actor_token',
      'user_code',
      'request_uri',
      'dpop',
      'authorization',
      'cookie',
      'privatekey',
      'api_key',
      'apikey',
      'RelayState',
    ]) {
      expect(redactUrl(`/x?a=1&${name}=s3cr3t&b=2`), name).to.equal(`/x?a=1&${name}=[redacted]&b=2`);
    }
  });

  it('keeps what only names or points: a client, a redirect URI, a scope, a hint, a type', function () {
    const url = '/auth/authorize?client_id=web&redirect_uri=https%3A%2F%2Fweb.example%2Fcb&scope=openid&login_hint=ann&response_type=code';
    expect(redactUrl(url)).to.equal(url);
    const exchange = '/auth/token?subject_token_type=urn%3Aietf%3Aparams%3Aoauth%3Atoken-type%3Aaccess_token&resource=https%3A%2F%2Fa';
    expect(redactUrl(exchange)).to.equal(exchange);
  });

  it('judges names decoded and in any case, as the query parser reads them', function () {
    expect(redactUrl('/users?access%5Ftoken=abc')).to.equal('/users?access%5Ftoken=[redacted]');
    expect(redactUrl('/users?%61ccess_token=abc')).to.equal('/users?%61ccess_token=[redacted]');
    expect(redactUrl('/users?%61%63%63%65%73%73%5f%74%6f%6b%65%6e=abc')).to.not.include('abc');
    expect(redactUrl('/users?ACCESS_TOKEN=abc&Client_Secret=def')).to.equal('/users?ACCESS_TOKEN=[redacted]&Client_Secret=[redacted]');
    expect(redactUrl('/users?access+token=abc')).to.equal('/users?access+token=abc'); // "access token": not a credential
  });

  it('redacts every occurrence of a repeated name', function () {
    expect(redactUrl('/users?access_token=a&x=1&access%5Ftoken=b&access_token=c')).to.equal(
      '/users?access_token=[redacted]&x=1&access%5Ftoken=[redacted]&access_token=[redacted]',
    );
  });

  it('redacts in fragments too, and stops a query value at the fragment', function () {
    expect(redactUrl('/cb#access_token=abc&token_type=Bearer&state=xyz')).to.equal(
      '/cb#access_token=[redacted]&token_type=Bearer&state=[redacted]',
    );
    expect(redactUrl('/cb?code=abc#frag')).to.equal('/cb?code=[redacted]#frag');
    expect(redactUrl('/cb?x=1#code=abc')).to.equal('/cb?x=1#code=[redacted]');
  });

  it('never throws on malformed encoding: a name that does not decode has its value redacted', function () {
    expect(redactUrl('/users?%ZZ=abc&x=%ZZ')).to.equal('/users?%ZZ=[redacted]&x=%ZZ');
    expect(redactUrl('/users?access%5Ftoken%E0%A4%A=abc')).to.equal('/users?access%5Ftoken%E0%A4%A=[redacted]');
    expect(redactUrl('/users?%=abc&%%%=def')).to.equal('/users?%=[redacted]&%%%=[redacted]');
    expect(redactUrl('/%ZZ/x?y=1')).to.equal('/%ZZ/x?y=1');
  });
});

describe('createRequestLogger', function () {
  it('keeps up with a busy process: its lines reach stdout within a turn or two, not megabytes behind', async function () {
    // A worker deciding 7,500 requests a second logs 11 MB/s, in turns of the event loop of a few
    // milliseconds. Here, 55 kB of lines in each turn of 1 ms (five times that rate), for 200 turns.
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'request-log-')), 'log');
    const fd = fs.openSync(file, 'w');
    const log = createRequestLogger('info', { box: 'test' }, fd);
    const policies = 'p'.repeat(1000); // a decision's audit line is about 1.25 kB
    const turns = 200;
    const perTurn = 50;
    const writtenAfterTurn: number[] = [];
    for (let turn = 0; turn < turns; turn++) {
      for (let i = 0; i < perTurn; i++) log.info({ n: String(turn * perTurn + i).padStart(6, '0'), policies }, 'decision');
      const end = performance.now() + 1; // the turn's requests
      while (performance.now() < end);
      await new Promise((resolve) => setImmediate(resolve));
      writtenAfterTurn.push(fs.fstatSync(fd).size);
    }

    const lines = fs.readFileSync(file, 'utf8').split('\n').filter(Boolean);
    fs.rmSync(path.dirname(file), { recursive: true }); // the descriptor stays open for the logger's last flush, at exit
    const lineBytes = Buffer.byteLength(lines[0]!) + 1; // every line as long: the same fields, `n` of six digits
    const behind = writtenAfterTurn.map((bytes, turn) => (turn + 1) * perTurn * lineBytes - bytes);
    // pino's asynchronous destination wrote 16 KiB a turn: 7.8 MB behind after 200 turns.
    expect(Math.max(...behind)).to.be.below(1024 * 1024);
    // Whole lines, in order.
    expect(lines.map((l) => (JSON.parse(l) as { n: string }).n)).to.deep.equal(
      [...Array(lines.length).keys()].map((n) => String(n).padStart(6, '0')),
    );
  });

  it("gives each line only its own fields: none of an earlier line's", function () {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'log-fields-'));
    const file = path.join(dir, 'log');
    const logModule = new URL('../../api/log.js', import.meta.url).href;
    const child = `
      import fs from 'node:fs';
      const { createLogger } = await import(${JSON.stringify(logModule)});
      const log = createLogger('info', {}, fs.openSync(${JSON.stringify(file)}, 'w'));
      log.info({ applied: ['001_core.sql'] }, 'database migrated');
      log.info({ client: 'root' }, 'token issued');
      process.exit(0);`;
    execFileSync(process.execPath, ['--input-type=module', '-e', child]);
    const lines = fs
      .readFileSync(file, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    fs.rmSync(dir, { recursive: true });
    // By their message, not their place: the exit writes the second line while a thread may still hold
    // the first (api/log-batches.ts flushSync), and their order is then the kernel's.
    expect(lines.map((l) => l.msg).sort()).to.deep.equal(['database migrated', 'token issued']);
    const issued = lines.find((l) => l.msg === 'token issued');
    expect(issued).to.include({ client: 'root' });
    expect(issued).not.to.have.property('applied');
  });

  it('writes at exit every line it was given, also those waiting behind a write under way', function () {
    // A process exits (process.exit, a shutdown) in the turn after it logged: the first 8 KiB went to a
    // thread's write, the lines after it waited for that write's callback, which an exit never runs.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'request-log-exit-'));
    const file = path.join(dir, 'log');
    const logModule = new URL('../../api/log.js', import.meta.url).href;
    const child = `
      import fs from 'node:fs';
      const { createRequestLogger } = await import(${JSON.stringify(logModule)});
      const log = createRequestLogger('info', {}, fs.openSync(${JSON.stringify(file)}, 'w'));
      const pad = 'p'.repeat(1000);
      for (let n = 0; n < 20; n++) log.info({ n, pad }, 'answered');
      for (let n = 20; n < 30; n++) log.info({ n }, 'answered');
      process.exit(0);`;
    execFileSync(process.execPath, ['--input-type=module', '-e', child]);
    const lines = fs.readFileSync(file, 'utf8').split('\n').filter(Boolean);
    fs.rmSync(dir, { recursive: true });
    // Whole lines, each once (the thread's write and the exit's are two writes: their order is the kernel's).
    const logged = lines.map((l) => (JSON.parse(l) as { n: number }).n).sort((a, b) => a - b);
    expect(logged).to.deep.equal([...Array(30).keys()]);
  });

  it('serves on when the reader of its lines is gone (EPIPE), by a write of a thread or one at once', async function () {
    const logModule = new URL('../../api/log.js', import.meta.url).href;
    const child = `
      const { createRequestLogger } = await import(${JSON.stringify(logModule)});
      await new Promise((resolve) => setTimeout(resolve, 200)); // the reader is gone by now
      const log = createRequestLogger('info', {}, 1);
      const pad = 'p'.repeat(1000);
      for (let turn = 0; turn < 20; turn++) {
        for (let n = 0; n < 20; n++) log.info({ n, pad }, 'answered');
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      process.stderr.write('served ');
      for (let n = 0; n < 5000; n++) log.info({ n, pad }, 'answered'); // past 4 MB waiting: written at once
      await new Promise((resolve) => setTimeout(resolve, 150));
      process.stderr.write('on');`;
    const logging = spawn(process.execPath, ['--input-type=module', '-e', child], { stdio: ['ignore', 'pipe', 'pipe'] });
    logging.stdout.destroy();
    let said = '';
    logging.stderr.on('data', (chunk: Buffer) => (said += chunk.toString()));
    const [code, signal] = await new Promise<[number | null, string | null]>((resolve) => logging.on('close', (c, s) => resolve([c, s])));
    expect({ code, signal, said }).to.deep.equal({ code: 0, signal: null, said: 'served on' });
  });
});
