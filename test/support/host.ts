// Starts a host of many boxes (`BOXAUTH_HOSTED_BOXES`, api/host/) as a real
// process, with a registry file this test writes, and reaches each box at its
// own host name (`<name>.test`) through a dispatcher that connects every name to
// the host's loopback port: the Host header picks the box, as in a cluster.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Agent } from 'undici';
import { projectPath } from '../../api/paths.js';
import { Box, collectInto } from './box.js';
import { onFreePorts } from './ports.js';
import { createDatabase } from './postgres.js';

export interface HostedBoxSpec {
  /** Its name in the registry (`team-a/default`) and its host name's first label (`team-a`). */
  team: string;
  databaseUrl?: string;
  env?: Record<string, string>;
}

export interface HostedEntry {
  box: string;
  hostnames: string[];
  env: Record<string, string>;
}

export interface HostOptions {
  /** Options for node itself, e.g. --cpu-prof. */
  nodeArgs?: string[];
  /** Its log into this file, not `logs` (a bench's host logs a line per request): see BoxOptions.logFile. */
  logFile?: string;
}

export class Host {
  readonly logs: string[] = [];
  process: ChildProcess | undefined;
  /** Connects every host name to the host's port on loopback. */
  readonly dispatcher: Agent;
  readonly entries = new Map<string, HostedEntry>();

  private constructor(
    readonly port: number,
    readonly metricsPort: number,
    readonly registryFile: string,
    private readonly env: Record<string, string>,
    private readonly options: HostOptions,
  ) {
    this.dispatcher = new Agent({
      connect: { lookup: (_host, _options, callback) => callback(null, [{ address: '127.0.0.1', family: 4 }] as never, 4) },
    });
  }

  /** On free ports (its boxes' URLs name the port): again on new ones when another process took one first. */
  static start(boxes: HostedBoxSpec[], env: Record<string, string> = {}, options: HostOptions = {}): Promise<Host> {
    return onFreePorts(2, async ([port, metricsPort]) => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'boxauth-host-'));
      const host = new Host(
        port,
        metricsPort,
        path.join(dir, 'boxes.json'),
        {
          BOXAUTH_HOST: '127.0.0.1',
          BOXAUTH_DATA_DIR: dir,
          BOXAUTH_LOG_LEVEL: 'info',
          ...env,
        },
        options,
      );
      for (const spec of boxes) await host.add(spec, { write: false });
      host.writeRegistry();
      await host.launch();
      return host;
    });
  }

  /** The URL of `team`'s box: its issuer. */
  urlOf(team: string): string {
    return `http://${team}.test:${this.port}`;
  }

  /** Adds a box to the registry (written now unless `write: false`). */
  async add(spec: HostedBoxSpec, { write = true } = {}): Promise<HostedEntry> {
    const entry: HostedEntry = {
      box: `${spec.team}/default`,
      hostnames: [`${spec.team}.test`],
      env: {
        DATABASE_URL: spec.databaseUrl ?? (await createDatabase()),
        BOXAUTH_BASE_URL: this.urlOf(spec.team),
        BOXAUTH_ROOT_CLIENT_SECRET: `root-${randomBytes(12).toString('hex')}`,
        BOXAUTH_FACTOR_KEY: randomBytes(32).toString('base64'),
        ...spec.env,
      },
    };
    this.entries.set(spec.team, entry);
    if (write) this.writeRegistry();
    return entry;
  }

  remove(team: string): void {
    this.entries.delete(team);
    this.writeRegistry();
  }

  /** Writes the registry as a Secret volume changes it: a new file swapped in whole. */
  writeRegistry(text = JSON.stringify({ boxes: [...this.entries.values()] })): void {
    const next = `${this.registryFile}.${randomBytes(4).toString('hex')}`;
    fs.writeFileSync(next, text);
    fs.renameSync(next, this.registryFile);
  }

  /** `team`'s box as a test Box: requests at its URL, its root client. */
  box(team: string): Box {
    const entry = this.entries.get(team);
    if (!entry) throw new Error(`no hosted box ${team}`);
    return Box.remote(this.urlOf(team), this.dispatcher, entry.env.BOXAUTH_ROOT_CLIENT_SECRET!);
  }

  /** Waits until `team`'s box answers /readyz (prepared). */
  async ready(team: string, timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const res = await fetch(`${this.urlOf(team)}/readyz`, { dispatcher: this.dispatcher } as RequestInit).catch(() => undefined);
      if (res?.status === 200) return;
      if (Date.now() > deadline) throw new Error(`hosted box ${team} not ready:\n${this.logs.slice(-20).join('\n')}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  async metrics(): Promise<string> {
    return (await fetch(`http://127.0.0.1:${this.metricsPort}/metrics`)).text();
  }

  async launch(): Promise<void> {
    const child = spawn(process.execPath, [...(this.options.nodeArgs ?? []), projectPath('dist', 'api', 'main.js')], {
      cwd: projectPath(),
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        MALLOC_MMAP_THRESHOLD_: '131072',
        BOXAUTH_PORT: String(this.port),
        BOXAUTH_METRICS_PORT: String(this.metricsPort),
        BOXAUTH_HOSTED_BOXES: this.registryFile,
        ...this.env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.process = child;
    if (this.options.logFile) {
      collectInto(this.options.logFile, child);
    } else {
      const collect = (chunk: Buffer): void => void this.logs.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      child.stdout.on('data', collect);
      child.stderr.on('data', collect);
    }
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`host exited with ${child.exitCode}:\n${this.logs.slice(-20).join('\n')}`);
      const res = await fetch(`http://127.0.0.1:${this.port}/healthz`).catch(() => undefined);
      if (res?.status === 200) return;
      if (Date.now() > deadline) throw new Error(`host did not start:\n${this.logs.slice(-20).join('\n')}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    const child = this.process;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill(signal);
    await exited;
  }
}
