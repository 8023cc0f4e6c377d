// kubectl signs in as a box user, against real parts: a box over HTTPS (a CA of
// the test's own), a kube-apiserver started with the AuthenticationConfiguration
// that `boxauth kube-login setup` prints, the real kubectl running the real plugin
// (node bin/boxauth.js kube-login) as its exec credential plugin. A person signs in
// when kubectl runs in a terminal (util-linux `script` gives it one): with a
// FormAgent for the code flow, with Chromium for the device flow. The cases are
// one story, in order: sign in, use RBAC, lose a group, lose the session.
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { decodeJwt } from 'jose';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { projectPath } from '../../api/paths.js';
import { Box, type JsonResponse } from '../support/box.js';
import { launchBrowser, screenshot } from '../support/browser.js';
import { FormAgent, hiddenFields } from '../support/form-agent.js';
import { KUBE_BIN, KUBECTL_CLIENT, TestCluster } from '../support/kube.js';
import { GROUPS_DN, PEOPLE, PEOPLE_DN, SERVICE, startSlapd, type Slapd } from '../support/slapd.js';
import { testCa, type TestCa } from '../support/tls.js';
import { connectUpstream, TwoHostBrowser } from '../support/upstream.js';
import { startAll } from '../support/start-all.js';

const CLI = projectPath('bin', 'boxauth.js');
const KUBECTL = path.join(KUBE_BIN, 'kubectl');
const ARTIFACTS = projectPath('test-artifacts');

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** A child whose output is read as it comes (the sign-in address the plugin prints). */
class Child {
  stdout = '';
  stderr = '';
  readonly exited: Promise<Run>;

  constructor(file: string, args: string[], env: NodeJS.ProcessEnv) {
    const child = spawn(file, args, { env, stdio: ['pipe', 'pipe', 'pipe'] });
    child.stdout.on('data', (d: Buffer) => (this.stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (this.stderr += d.toString()));
    // stdin stays open: `script` would end the terminal session at its end.
    this.exited = new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout: this.stdout, stderr: this.stderr })));
  }

  /** The first match of `pattern` in what the child has written so far, waiting for it. */
  async waitFor(pattern: RegExp, timeoutMs = 30_000): Promise<RegExpMatchArray> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const m = pattern.exec(this.stdout + this.stderr);
      if (m) return m;
      if (Date.now() > deadline) throw new Error(`no ${pattern} after ${timeoutMs} ms in:\n${this.stdout}${this.stderr}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

describe('kubectl signs in with box users (boxauth kube-login)', function () {
  this.timeout(180_000);
  let ca: TestCa;
  let box: Box;
  let root: string;
  let annId: number;
  let devsId: number;
  let cluster: TestCluster;
  let dir: string;
  let cacheDir: string;
  let kubeconfig: string;
  let env: NodeJS.ProcessEnv;
  let setupDocs: any[];
  let boxFlags: string[];
  let pluginFlags: string[];

  before(async function () {
    ca = testCa();
    box = await Box.start({ tls: { ...ca.issue('box'), dispatcher: ca.dispatcher } });
    root = await box.rootToken();
    devsId = (await box.json('POST', '/groups', { name: 'devs', description: 'Developers' }, root)).body.id;
    const ann = await box.json('POST', '/users', { email: 'ann@example.com', password: 'ann-password-1', 'group-ids': [devsId] }, root);
    expect(ann.status, ann.text).to.equal(201);
    annId = ann.body.id;
    const client = await box.json('PUT', '/Client/kubectl', KUBECTL_CLIENT, root);
    expect(client.status, client.text).to.equal(201);

    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'boxauth-kube-login-'));
    cacheDir = path.join(dir, 'cache');
    env = { PATH: process.env.PATH, HOME: dir };
    boxFlags = ['--box', box.url, '--client', 'kubectl', '--ca-file', ca.caFile];
    pluginFlags = [...boxFlags, '--no-browser'];
    const setup = await run(process.execPath, [CLI, 'kube-login', 'setup', ...boxFlags, '--name', 'ann']);
    expect(setup.code, setup.stderr).to.equal(0);
    setupDocs = parseAllDocuments(setup.stdout).map((d) => d.toJS());
    const authConfig = path.join(dir, 'auth-config.yaml');
    fs.writeFileSync(authConfig, stringify(setupDocs[1]));
    cluster = await TestCluster.start({ authConfig });

    kubeconfig = kubeconfigFor('ann', cacheDir);
    // A role of its own: `view` is an aggregated ClusterRole, filled in by kube-controller-manager, which this cluster lacks.
    await cluster.k(['create', 'clusterrole', 'namespace-reader', '--verb=get,list,watch', '--resource=namespaces']);
    await cluster.k(['create', 'clusterrolebinding', 'devs-read-namespaces', '--clusterrole=namespace-reader', '--group=devs']);
  });

  after(async function () {
    await cluster?.stop();
    await box?.stop();
    await ca?.dispatcher.close();
    for (const d of [dir, ca?.dir]) if (d) fs.rmSync(d, { recursive: true, force: true });
  });

  /**
   * `name`'s kubeconfig: the cluster as the admin's names it, the user as setup printed it, its
   * `boxauth` being this checkout's (and tokens cached in `cache`, in the test's own directory).
   */
  function kubeconfigFor(name: string, cache: string): string {
    const admin = parse(fs.readFileSync(cluster.kubeconfig, 'utf8'));
    const user = structuredClone(setupDocs[0].users[0]);
    user.name = name;
    user.user.exec.command = process.execPath;
    user.user.exec.args = [CLI, ...user.user.exec.args, `--cache-dir=${cache}`, '--no-browser', '--timeout=60'];
    const file = path.join(dir, `${name}.kubeconfig`);
    fs.writeFileSync(
      file,
      stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: admin.clusters,
        users: [user],
        contexts: [{ name, context: { cluster: admin.clusters[0].name, user: name } }],
        'current-context': name,
      }),
    );
    return file;
  }

  function run(file: string, args: string[], extraEnv: NodeJS.ProcessEnv = {}): Promise<Run> {
    const child = new Child(file, args, { ...env, ...extraEnv });
    return child.exited;
  }

  /** kubectl as Ann runs it from a script: no terminal, so the plugin may not ask anyone to sign in. */
  const kubectl = (...args: string[]): Promise<Run> => run(KUBECTL, [`--kubeconfig=${kubeconfig}`, ...args]);

  /** kubectl as Ann (or whose `config` it is) runs it in a terminal; its stdout goes to a file, the terminal shows the rest. */
  function kubectlInTerminal(args: string[], config = kubeconfig): { child: Child; out: string } {
    const out = path.join(dir, `out-${Date.now()}.txt`);
    const quote = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;
    const command = [KUBECTL, `--kubeconfig=${config}`, ...args].map(quote).join(' ');
    return { child: new Child('script', ['-qfec', `${command} > ${quote(out)}`, '/dev/null'], env), out };
  }

  const cachePath = (): string => {
    const files = fs.readdirSync(cacheDir).filter((f) => f.endsWith('.json'));
    expect(files).to.have.length(1);
    return path.join(cacheDir, files[0]!);
  };

  /** What the clock does after the ID token's lifetime: the cached token counts as expired (its signature no longer matters). */
  function expireCachedIdToken(): void {
    const file = cachePath();
    const cached = JSON.parse(fs.readFileSync(file, 'utf8'));
    const [header, , signature] = cached.id_token.split('.');
    const claims = { ...decodeJwt(cached.id_token), exp: Math.floor(Date.now() / 1000) - 60 };
    cached.id_token = [header, Buffer.from(JSON.stringify(claims)).toString('base64url'), signature].join('.');
    fs.writeFileSync(file, JSON.stringify(cached));
  }

  const whoami = async (): Promise<{ username: string; groups: string[] }> => {
    const res = await kubectl('auth', 'whoami', '-o', 'json');
    expect(res.code, res.stderr).to.equal(0);
    return JSON.parse(res.stdout).status.userInfo;
  };

  it('setup prints a kubeconfig user running the plugin, and an AuthenticationConfiguration that trusts the box', function () {
    expect(setupDocs[0].users[0].user.exec).to.include({
      apiVersion: 'client.authentication.k8s.io/v1',
      interactiveMode: 'IfAvailable',
    });
    expect(setupDocs[1]).to.deep.include({ apiVersion: 'apiserver.config.k8s.io/v1', kind: 'AuthenticationConfiguration' });
    expect(setupDocs[1].jwt[0]).to.deep.equal({
      issuer: { url: box.url, certificateAuthority: ca.pem, audiences: ['kubectl'] },
      claimMappings: { username: { claim: 'email', prefix: '' }, groups: { claim: 'groups', prefix: '' } },
    });
  });

  it('a person who denies, a stray request to the loopback, no one signing in: the plugin says so and exits 1', async function () {
    const plugin = new Child(process.execPath, [CLI, 'kube-login', ...pluginFlags, `--cache-dir=${path.join(dir, 'denied')}`], env);
    const [address] = await plugin.waitFor(/https:\/\/\S+\/auth\/authorize\?\S+/);
    const url = new URL(address);
    const callback = url.searchParams.get('redirect_uri')!;
    const stray = await fetch(`${callback}?code=stolen&state=not-this-one`);
    expect(stray.status).to.equal(400);
    const browser = new FormAgent(box);
    const signInPage = await browser.get(`${url.pathname}${url.search}`);
    const signedIn = await browser.post('/auth/sign-in', {
      ...hiddenFields(signInPage.text),
      email: 'ann@example.com',
      password: 'ann-password-1',
    });
    const denied = await browser.consent(await browser.get(signedIn.headers.get('location')!), 'deny');
    const tab = await fetch(denied.headers.get('location')!);
    expect(tab.status).to.equal(400);
    expect(await tab.text()).to.include('Sign-in failed');
    const done = await plugin.exited;
    expect(done.code).to.equal(1);
    expect(done.stdout).to.equal('');
    expect(done.stderr).to.match(/boxauth kube-login: the box refused the sign-in: .* \(access_denied\)\n$/);

    const late = await run(process.execPath, [CLI, 'kube-login', ...pluginFlags, '--timeout=1', `--cache-dir=${path.join(dir, 'late')}`]);
    expect(late.code).to.equal(1);
    expect(late.stderr).to.include('boxauth kube-login: no sign-in within 1 s');
  });

  it('without the CA of a private box, or without --box, the plugin says what is missing', async function () {
    const untrusted = await run(process.execPath, [CLI, 'kube-login', '--box', box.url, '--client', 'kubectl', `--cache-dir=${dir}/x`]);
    expect(untrusted.code).to.equal(1);
    expect(untrusted.stderr).to.include(`cannot reach the box at ${box.url}`).and.include('give its certificate with --ca-file');
    const usage = await run(process.execPath, [CLI, 'kube-login', '--client', 'kubectl']);
    expect(usage.code).to.equal(2);
    expect(usage.stderr).to.include('--box <url> is required');
    const help = await run(process.execPath, [CLI, 'kube-login', '--help']);
    expect(help.code).to.equal(0);
    for (const flag of ['--box', '--client', '--ca-file', '--scope', '--device', '--listen-port', '--no-browser', '--cache-dir']) {
      expect(help.stdout).to.include(flag);
    }
  });

  it('the first kubectl in a terminal has Ann sign in through the printed address; whoami shows her email and groups', async function () {
    const { child, out } = kubectlInTerminal(['auth', 'whoami', '-o', 'json']);
    const [address] = await child.waitFor(/https:\/\/\S+\/auth\/authorize\?\S+/);
    const url = new URL(address);
    expect(url.searchParams.get('code_challenge_method')).to.equal('S256');
    expect(url.searchParams.get('redirect_uri')).to.match(/^http:\/\/127\.0\.0\.1:\d+\/callback$/);
    for (const p of ['state', 'nonce', 'code_challenge']) expect(url.searchParams.get(p)).to.have.length.above(20);

    const browser = new FormAgent(box);
    const signInPage = await browser.get(`${url.pathname}${url.search}`);
    expect(signInPage.text).to.include('action="/auth/sign-in"');
    const signedIn = await browser.post('/auth/sign-in', {
      ...hiddenFields(signInPage.text),
      email: 'ann@example.com',
      password: 'ann-password-1',
    });
    expect(signedIn.status, signedIn.text).to.equal(303);
    const consentPage = await browser.get(signedIn.headers.get('location')!);
    expect(consentPage.text).to.include('value="allow"');
    const redirect = await browser.consent(consentPage, 'allow');
    expect(redirect.status).to.equal(302);
    const tab = await fetch(redirect.headers.get('location')!);
    expect(tab.status).to.equal(200);
    expect(await tab.text()).to.include('You can close this tab');

    const done = await child.exited;
    expect(done.code, done.stdout).to.equal(0);
    const review = JSON.parse(fs.readFileSync(out, 'utf8'));
    expect(review.status.userInfo.username).to.equal('ann@example.com');
    expect(review.status.userInfo.groups).to.include.members(['devs', 'system:authenticated']);

    // The same, as a table (from the cache now: nobody is asked anything).
    const table = await kubectl('auth', 'whoami');
    expect(table.code, table.stderr).to.equal(0);
    expect(table.stderr).to.equal('');
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    fs.writeFileSync(path.join(ARTIFACTS, 'kube-login-whoami.txt'), `$ kubectl auth whoami\n${table.stdout}`);
    expect(table.stdout).to.match(/Username\s+ann@example\.com/);
  });

  it('keeps the tokens per box and client: directory 0700, file 0600, with the refresh token', function () {
    expect(fs.statSync(cacheDir).mode & 0o777).to.equal(0o700);
    const file = cachePath();
    expect(fs.statSync(file).mode & 0o777).to.equal(0o600);
    const cached = JSON.parse(fs.readFileSync(file, 'utf8'));
    expect(cached).to.include({ issuer: box.url, client_id: 'kubectl', scope: 'openid email groups' });
    expect(cached.refresh_token).to.be.a('string');
    expect(decodeJwt(cached.id_token)).to.include({ email: 'ann@example.com', aud: 'kubectl' });
  });

  it('the box group devs, bound to a ClusterRole that reads namespaces, lets Ann read namespaces and nothing more', async function () {
    const get = await kubectl('get', 'namespaces', '-o', 'name');
    expect(get.code, get.stderr).to.equal(0);
    expect(get.stdout).to.include('namespace/default');
    const create = await kubectl('create', 'namespace', 'ann-was-here');
    expect(create.code).to.not.equal(0);
    expect(create.stderr).to.include('Forbidden').and.include('"ann@example.com"');
  });

  it('removing Ann from devs takes effect at the next token, which the plugin gets by a silent refresh', async function () {
    const removed = await box.json('PUT', `/users/${annId}`, { 'group-ids': [] }, root);
    expect(removed.status, removed.text).to.equal(200);
    // The ID token kubectl holds still says devs until it expires.
    expect((await whoami()).groups).to.include('devs');
    const before = JSON.parse(fs.readFileSync(cachePath(), 'utf8'));
    expireCachedIdToken();

    const res = await kubectl('auth', 'whoami', '-o', 'json');
    expect(res.code, res.stderr).to.equal(0);
    expect(res.stderr).to.equal(''); // nobody was asked to sign in
    const user = JSON.parse(res.stdout).status.userInfo;
    expect(user.username).to.equal('ann@example.com');
    expect(user.groups).to.not.include('devs');
    const after = JSON.parse(fs.readFileSync(cachePath(), 'utf8'));
    expect(after.id_token).to.not.equal(before.id_token);
    expect(decodeJwt(after.id_token).exp).to.be.above(Date.now() / 1000 + 500);
    const get = await kubectl('get', 'namespaces');
    expect(get.code).to.not.equal(0);
    expect(get.stderr).to.include('Forbidden');
  });

  it('closing the session makes the refresh fail: without a terminal the plugin says what to do, and kubectl fails', async function () {
    const sessions = await box.json('GET', `/Session?client=kubectl&user=${annId}&active=true`, undefined, root);
    expect(sessions.body.entry).to.have.length.above(0);
    for (const { resource } of sessions.body.entry) await box.json('DELETE', `/Session/${resource.id}`, undefined, root);
    expireCachedIdToken();

    const res = await kubectl('auth', 'whoami');
    expect(res.code).to.not.equal(0);
    expect(res.stderr).to.match(/boxauth kube-login: sign-in needed \(the box refused the refresh token: .*\): run kubectl in a terminal/);

    const plugin = await run(process.execPath, parse(fs.readFileSync(kubeconfig, 'utf8')).users[0].user.exec.args, {
      KUBERNETES_EXEC_INFO: JSON.stringify({
        apiVersion: 'client.authentication.k8s.io/v1',
        kind: 'ExecCredential',
        spec: { interactive: false },
      }),
    });
    expect(plugin.code).to.equal(1);
    expect(plugin.stdout).to.equal('');
    expect(plugin.stderr.trim().split('\n')).to.have.length(1);
    expect(plugin.stderr).to.include('sign-in needed (not signed in yet)');
    expect(plugin.stderr).to.include(`\`boxauth kube-login --box=${box.url} --client=kubectl`).and.include(`--cache-dir=${cacheDir}`);
  });

  it('--device: Ann approves the code in Chromium, and the plugin prints an ExecCredential the API server accepts', async function () {
    const browser = await launchBrowser();
    try {
      const plugin = new Child(
        process.execPath,
        [CLI, 'kube-login', '--device', ...boxFlags, '--cache-dir', path.join(dir, 'device')],
        env,
      );
      const [, verificationUri, userCode] = await plugin.waitFor(/open\s+(https:\S+)\s+and enter the code (\S+)/);
      expect(plugin.stderr).to.include(`${verificationUri}?user_code=${userCode}`);

      const context = await browser.newContext({ ignoreHTTPSErrors: true }); // the test CA is not the system's
      const page = await context.newPage();
      await page.goto(verificationUri!);
      await page.getByLabel('Email').fill('ann@example.com');
      await page.getByLabel('Password').fill('ann-password-1');
      await page.getByRole('button', { name: 'Sign in', exact: true }).click();
      await page.getByLabel('Code').fill(userCode!);
      await page.getByRole('button', { name: 'Continue' }).click();
      await page.getByText(userCode!).waitFor();
      await screenshot(page, 'kube-login-device-allow');
      await page.getByRole('button', { name: 'Allow' }).click();
      await page.getByRole('heading', { name: 'Device connected' }).waitFor();

      const done = await plugin.exited;
      expect(done.code, done.stderr).to.equal(0);
      const credential = JSON.parse(done.stdout);
      expect(credential).to.include({ apiVersion: 'client.authentication.k8s.io/v1', kind: 'ExecCredential' });
      expect(credential.status.expirationTimestamp).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
      expect(Date.parse(credential.status.expirationTimestamp) / 1000).to.equal(decodeJwt(credential.status.token).exp);
      const res = await run(KUBECTL, [
        `--server=${cluster.url}`,
        `--certificate-authority=${path.join(cluster.dir, 'certs', 'apiserver.crt')}`,
        `--token=${credential.status.token}`,
        'auth',
        'whoami',
        '-o',
        'jsonpath={.status.userInfo.username}',
      ]);
      expect(res.stdout, res.stderr).to.equal('ann@example.com');
    } finally {
      await browser.close();
    }
  });

  describe('through an upstream: another box, a directory', function () {
    let upstream: Box;
    let slapd: Slapd;

    before(async function () {
      [upstream, slapd] = await startAll([Box.start({ hostname: 'localhost' }), startSlapd()]);
      // B's and the directory's eng are the box's devs, which may read namespaces. Both are
      // trusted for emails: the API server takes an email as the username only when verified.
      const linking = { trustEmail: true };
      await connectUpstream(box, upstream, 'corp', { displayName: 'Corp', linking, groups: [{ group: 'devs', upstream: 'eng' }] });
      const directory = await box.json(
        'PUT',
        '/IdentityProvider/directory',
        {
          type: 'ldap',
          displayName: 'Directory',
          ldap: {
            url: slapd.ldapUrl,
            startTLS: true,
            ca: slapd.ca,
            bindDN: SERVICE.dn,
            userSearch: { baseDN: PEOPLE_DN, filter: '(objectClass=inetOrgPerson)', usernameAttribute: 'uid' },
            groupSearch: { baseDN: GROUPS_DN },
            emailVerified: true,
          },
          secret: SERVICE.password,
          linking,
          groups: [{ group: 'devs', upstream: 'eng' }],
        },
        root,
      );
      expect(directory.status, directory.text).to.equal(201);
    });
    after(async function () {
      await Promise.all([upstream?.stop(), slapd?.stop()]);
    });

    /**
     * kubectl in a terminal for a person with a kubeconfig of their own; `signIn` takes the
     * browser from the printed address to the box's consent page. Then whoami, as kubectl shows it.
     */
    async function whoamiAfter(name: string, signIn: (browser: FormAgent, authorize: string) => Promise<JsonResponse>): Promise<any> {
      const config = kubeconfigFor(name, path.join(dir, `cache-${name}`));
      const { child, out } = kubectlInTerminal(['auth', 'whoami', '-o', 'json'], config);
      const [address] = await child.waitFor(/https:\/\/\S+\/auth\/authorize\?\S+/);
      const url = new URL(address);
      const browser = new FormAgent(box);
      const consentPage = await signIn(browser, url.pathname + url.search);
      expect(consentPage.status, consentPage.text).to.equal(200);
      const redirect = await browser.consent(consentPage, 'allow');
      expect(redirect.status).to.equal(302);
      expect((await fetch(redirect.headers.get('location')!)).status).to.equal(200);
      const done = await child.exited;
      expect(done.code, done.stdout).to.equal(0);
      const user = JSON.parse(fs.readFileSync(out, 'utf8')).status.userInfo;
      const get = await run(KUBECTL, [`--kubeconfig=${config}`, 'get', 'namespaces', '-o', 'name']);
      expect(get.stdout, get.stderr).to.include('namespace/default');
      return user;
    }

    it("a person of another box signs in through it (Corp); kubectl acts as them, in the box's devs", async function () {
      const rootB = await upstream.rootToken();
      const eng = (await upstream.json('POST', '/groups', { name: 'eng' }, rootB)).body.id;
      const pat = { email: 'pat@corp.example', password: 'pat-password-1', email_verified: true, 'group-ids': [eng] };
      expect((await upstream.json('POST', '/users', pat, rootB)).status).to.equal(201);
      const user = await whoamiAfter('pat', async (atBox, authorize) => {
        const twoHosts = new TwoHostBrowser(box, upstream, atBox);
        const back = await twoHosts.signIn('corp', pat.email, pat.password, authorize);
        expect(back.status, back.text).to.equal(303);
        return atBox.get(back.headers.get('location')!);
      });
      expect(user.username).to.equal(pat.email);
      expect(user.groups).to.include.members(['devs', 'system:authenticated']);
    });

    it('a person of the LDAP directory signs in through its form (Directory); kubectl acts as them, in devs', async function () {
      const alice = PEOPLE.alice;
      const user = await whoamiAfter('alice', async (atBox, authorize) => {
        const signInPage = await atBox.get(authorize);
        const link = /href="(\/auth\/upstream\/directory\?[^"]+)"/.exec(signInPage.text);
        expect(link, 'the sign-in page offers the directory').to.not.equal(null);
        const form = await atBox.get(link![1]!.replace(/&amp;/g, '&'));
        const back = await atBox.post('/auth/upstream/directory', {
          ...hiddenFields(form.text),
          username: alice.uid,
          password: alice.password,
        });
        expect(back.status, back.text).to.equal(303);
        return atBox.get(back.headers.get('location')!);
      });
      expect(user.username).to.equal(alice.mail);
      expect(user.groups).to.include.members(['devs', 'system:authenticated']);
      // Groups the rules do not name stay in the directory.
      expect(user.groups.filter((g: string) => ['eng', 'staff', 'everyone'].includes(g))).to.deep.equal([]);
    });
  });
});
