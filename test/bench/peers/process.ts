// The peers' processes: each in a process group of its own (Keycloak's kc.sh
// runs java as its child), output to a log file, stopped with its whole group
// when the run ends, fails or is interrupted, so no server outlives a run.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { promisify } from 'node:util';
import { projectPath } from '../../../api/paths.js';
import { sleep } from '../../support/box.js';

const run = promisify(execFile);

export interface PeerProcess {
  child: ChildProcess;
  /** Where its stdout and stderr go. */
  logFile: string;
  /** Stops the group (SIGTERM, then SIGKILL after `graceMs`); resolves once the process is gone. */
  stop(graceMs?: number): Promise<void>;
}

const running = new Set<PeerProcess>();
/** What else an interrupted run stops after its peers (the bench's PostgreSQL). */
const onInterrupt = new Set<() => Promise<void>>();

export function stopOnInterrupt(stop: () => Promise<void>): () => void {
  onInterrupt.add(stop);
  return () => onInterrupt.delete(stop);
}

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    process.kill(-child.pid!, signal);
  } catch {
    // the group is gone already
  }
}

// A run cut short (Ctrl-C, a kill, an error nobody caught) takes its peers with it.
process.once('exit', () => {
  for (const p of running) killGroup(p.child, 'SIGKILL');
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    process.stderr.write(`bench-peers: ${signal}: stopping the peers\n`);
    void Promise.all([...running].map((p) => p.stop(5000)))
      .then(() => Promise.all([...onInterrupt].map((stop) => stop())))
      .finally(() => process.exit(130));
  });
}

export function startProcess(command: string, args: string[], env: Record<string, string>, logFile: string): PeerProcess {
  const out = fs.openSync(logFile, 'a');
  const child = spawn(command, args, {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', out, out],
    detached: true,
  });
  fs.closeSync(out);
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
  const peer: PeerProcess = {
    child,
    logFile,
    async stop(graceMs = 30_000) {
      killGroup(child, 'SIGTERM');
      const timer = setTimeout(() => killGroup(child, 'SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
      // what the group's leader left behind (a java whose kc.sh died first)
      killGroup(child, 'SIGKILL');
      running.delete(peer);
    },
  };
  running.add(peer);
  return peer;
}

/** The last lines of a log, to say why a server did not come up. */
export function logTail(file: string, lines = 15): string {
  try {
    return fs.readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

/** Polls `url` until it answers 200; fails early when the process exits. */
export async function waitReady(p: PeerProcess, url: string, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (p.child.exitCode !== null || p.child.signalCode !== null) {
      throw new Error(
        `${what} exited (${p.child.exitCode ?? p.child.signalCode}) before it was ready; the end of ${p.logFile}:\n${logTail(p.logFile)}`,
      );
    }
    try {
      if ((await fetch(url, { signal: AbortSignal.timeout(2000) })).status === 200) return;
    } catch {
      // not listening yet
    }
    await sleep(500);
  }
  throw new Error(`${what} was not ready within ${timeoutMs / 1000} s; the end of ${p.logFile}:\n${logTail(p.logFile)}`);
}

/** Runs a command to its end with its output in the log file (Hydra's migrations). */
export async function runLogged(command: string, args: string[], env: Record<string, string>, logFile: string): Promise<void> {
  try {
    const { stdout, stderr } = await run(command, args, { env: { PATH: process.env.PATH ?? '', ...env }, maxBuffer: 16 << 20 });
    fs.appendFileSync(logFile, stdout + stderr);
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string };
    fs.appendFileSync(logFile, `${e.stdout ?? ''}${e.stderr ?? ''}`);
    throw new Error(`${command} ${args.join(' ')} failed; the end of ${logFile}:\n${logTail(logFile)}`, { cause: err });
  }
}

/**
 * Builds or fetches a peer with scripts/peers-build.sh (cached after the first
 * run); its progress shows on stderr. Returns the KEY=VALUE lines it prints.
 */
export async function buildPeer(name: 'hydra' | 'keycloak' | 'opa' | 'oauth2-proxy'): Promise<Record<string, string>> {
  return new Promise((resolve, reject) => {
    const child = spawn(projectPath('scripts', 'peers-build.sh'), [name], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString('utf8')));
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`scripts/peers-build.sh ${name} failed (exit ${code}); its messages are above`));
      resolve(
        Object.fromEntries(
          out.split('\n').flatMap((l) => (/^[A-Z0-9_]+=/.test(l) ? [[l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]] : [])),
        ),
      );
    });
  });
}
