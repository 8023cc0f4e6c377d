// scripts/kube-up.sh on a loaded machine: a component whose start is slow to reach its program
// (the forked shell not yet replaced by etcd when the script first looks) must be waited for, not
// taken for dead; and a start that fails stops what it started, leaving no orphan behind. The
// slowness is made by a `setsid` first on PATH that sleeps before it runs the real one, under a
// name of its own (as the forked shell has until exec: not the component's command line).
import { expect } from 'chai';
import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { projectPath } from '../../api/paths.js';
import { sleep } from '../support/box.js';
import { onFreePorts, portTaken } from '../support/ports.js';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function script(name: string, args: string[], env: Record<string, string>): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      projectPath('scripts', name),
      args,
      { env: { ...process.env, ...env }, maxBuffer: 16 * 1024 * 1024 },
      (err, stdout, stderr) => {
        resolve({ code: err ? Number((err as { code?: unknown }).code ?? -1) : 0, stdout, stderr });
      },
    );
  });
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return !/^\S+ \(.*\) Z/.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
};

/** The processes whose command line names `dir`: what a state dir's cluster runs. */
function processesOf(dir: string): string[] {
  const found: string[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmd = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' ');
      if (cmd.includes(dir) && alive(Number(entry))) found.push(`${entry}: ${cmd}`);
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

/** The pids the script said it started ("started etcd (pid N)"). */
const startedPids = (stderr: string): number[] => [...stderr.matchAll(/started [\w-]+ \(pid (\d+)\)/g)].map((m) => Number(m[1]));

describe('scripts/kube-up.sh with components slow to start (a loaded machine)', function () {
  this.timeout(300_000);
  const SLOW_SECONDS = 3;
  let fakeBin: string;
  const dirs: string[] = [];

  before(function () {
    fakeBin = fs.mkdtempSync(path.join(os.tmpdir(), 'boxauth-slow-setsid-'));
    const setsid = execFileSync('sh', ['-c', 'command -v setsid'], { encoding: 'utf8' }).trim();
    fs.writeFileSync(
      path.join(fakeBin, 'setsid'),
      `#!/usr/bin/perl\n$0 = 'slow-start';\nsleep ${SLOW_SECONDS};\nexec { '${setsid}' } '${setsid}', @ARGV or die "exec: $!";\n`,
      { mode: 0o755 },
    );
  });
  after(async function () {
    for (const dir of dirs) await script('kube-down.sh', ['--wipe'], { BOXAUTH_KUBE_DIR: dir });
    fs.rmSync(fakeBin, { recursive: true, force: true });
  });

  /** kube-up.sh in a new state dir on free ports; again on new ones when another process took one first. */
  function upOnFreePorts(
    over: Record<string, string> = {},
    beforeUp: (env: Record<string, string>) => Promise<void> = async () => undefined,
  ): Promise<{ env: Record<string, string>; up: Run }> {
    return onFreePorts(3, async ([port, etcd, peer]) => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'boxauth-kube-slow-'));
      dirs.push(dir);
      const env = {
        BOXAUTH_KUBE_DIR: dir,
        BOXAUTH_KUBE_PORT: String(port),
        BOXAUTH_ETCD_PORT: String(etcd),
        BOXAUTH_ETCD_PEER_PORT: String(peer),
        PATH: `${fakeBin}:${process.env.PATH}`,
        ...over,
      };
      await beforeUp(env);
      const up = await script('kube-up.sh', [], env);
      if (up.code !== 0 && portTaken(up.stderr)) throw new Error(up.stderr);
      return { env, up };
    });
  }

  it('waits for a component that has not reached its program yet, rather than saying it did not start', async function () {
    const { env, up } = await upOnFreePorts();
    const dir = env.BOXAUTH_KUBE_DIR!;
    expect(up.code, up.stderr).to.equal(0);
    expect(up.stdout.trim()).to.equal(`export KUBECONFIG=${fs.realpathSync(dir)}/kubeconfig`);
    // The pid files name the running components.
    for (const name of ['etcd', 'kube-apiserver']) {
      const pid = Number(fs.readFileSync(path.join(dir, `${name}.pid`), 'utf8'));
      expect(fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8'), name).to.include(`/${name}\0`);
    }
    const down = await script('kube-down.sh', [], { BOXAUTH_KUBE_DIR: dir });
    expect(down.code, down.stderr).to.equal(0);
    expect(processesOf(fs.realpathSync(dir))).to.deep.equal([]);
  });

  it('a port another process takes between its pick and the start: the cluster starts on new ones', async function () {
    const squatter = net.createServer();
    const tried: string[] = [];
    try {
      const { env, up } = await upOnFreePorts({}, async (env) => {
        tried.push(env.BOXAUTH_ETCD_PORT!);
        if (!squatter.listening) await new Promise<void>((resolve) => squatter.listen(Number(env.BOXAUTH_ETCD_PORT), '127.0.0.1', resolve));
      });
      expect(up.code, up.stderr).to.equal(0);
      expect(tried).to.have.length(2);
      expect(env.BOXAUTH_ETCD_PORT).to.not.equal(String((squatter.address() as net.AddressInfo).port));
      const down = await script('kube-down.sh', [], { BOXAUTH_KUBE_DIR: env.BOXAUTH_KUBE_DIR! });
      expect(down.code, down.stderr).to.equal(0);
    } finally {
      squatter.close();
    }
  });

  it('a start that does not become ready in time stops what it started: nothing is left running', async function () {
    const { env, up } = await upOnFreePorts({ BOXAUTH_KUBE_TIMEOUT: '1' });
    const dir = env.BOXAUTH_KUBE_DIR!;
    expect(up.code).to.not.equal(0);
    expect(up.stderr).to.include('etcd did not become ready');
    const started = startedPids(up.stderr);
    expect(started).to.have.length(1);
    await sleep((SLOW_SECONDS + 1) * 1000); // past the moment a forgotten child would have become etcd
    expect(started.filter(alive), 'the child it started').to.deep.equal([]);
    expect(processesOf(fs.realpathSync(dir))).to.deep.equal([]);
    expect(fs.existsSync(path.join(dir, 'etcd.pid'))).to.equal(false);
  });
});
