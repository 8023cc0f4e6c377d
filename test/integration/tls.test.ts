// HTTPS when asked: BOXAUTH_TLS_CERT_FILE / BOXAUTH_TLS_KEY_FILE, the base URL
// https, and a certificate replaced in place served without a restart.
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { projectPath } from '../../api/paths.js';
import { Box, eventually } from '../support/box.js';
import { presentedName, testCa, type TestCa } from '../support/tls.js';

describe('HTTPS', function () {
  this.timeout(60_000);
  let ca: TestCa;
  let box: Box;
  let files: { certFile: string; keyFile: string };

  before(async function () {
    ca = testCa();
    files = ca.issue('served', '/CN=first');
    box = await Box.start({ tls: { ...files, dispatcher: ca.dispatcher } });
  });
  after(async function () {
    await box?.stop();
  });

  it('serves HTTPS, and its base URL (the issuer) is https', async function () {
    expect(box.url).to.match(/^https:/);
    const discovery = await box.request('GET', '/.well-known/openid-configuration');
    expect(discovery.status).to.equal(200);
    expect(discovery.body.issuer).to.equal(box.url);
    expect(await presentedName(box.port, ca.pem)).to.equal('first');
    const plain = await fetch(`http://127.0.0.1:${box.port}/healthz`).then(
      (r) => r.status,
      () => 'refused',
    );
    expect(plain).to.not.equal(200);
  });

  it('marks its cookies Secure', async function () {
    const page = await box.request('GET', '/auth/sign-in');
    expect(page.headers.getSetCookie().join('\n')).to.match(/boxauth_csrf=.*; Secure/);
  });

  it('serves a certificate renewed in place, without a restart; files that do not load leave the last good pair', async function () {
    const pid = box.process!.pid;
    const renewed = ca.issue('renewed', '/CN=second');
    // As Kubernetes updates a mounted Secret: new files moved into place.
    fs.copyFileSync(renewed.keyFile, `${files.keyFile}.new`);
    fs.copyFileSync(renewed.certFile, `${files.certFile}.new`);
    fs.renameSync(`${files.keyFile}.new`, files.keyFile);
    fs.renameSync(`${files.certFile}.new`, files.certFile);
    await eventually('the renewed certificate', async () => (await presentedName(box.port, ca.pem)) === 'second', 10_000);
    expect(box.process!.pid).to.equal(pid);
    fs.writeFileSync(files.certFile, 'not a certificate');
    await eventually('the warning', async () => box.logs.some((l) => l.includes('do not load')), 10_000);
    expect(await presentedName(box.port, ca.pem)).to.equal('second');
    expect((await box.request('GET', '/healthz')).status).to.equal(200);
  });

  it('refuses to start with half a pair, naming what is missing', function () {
    const run = spawnSync(process.execPath, [projectPath('dist', 'api', 'main.js')], {
      env: { PATH: process.env.PATH, BOXAUTH_TLS_CERT_FILE: files.certFile },
      encoding: 'utf8',
    });
    expect(run.status).to.equal(2);
    expect(run.stderr).to.include('BOXAUTH_TLS_CERT_FILE and BOXAUTH_TLS_KEY_FILE go together');
  });
});
