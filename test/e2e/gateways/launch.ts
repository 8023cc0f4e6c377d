// Real gateways as processes for the tests: Debian's nginx and caddy, and Traefik
// built by scripts/test-tools-build.sh (make test-tools), each with the
// configuration of ./configs.ts on a free loopback port; and the app behind them, a
// node:http server that answers with the request it received.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { eventually } from '../../support/box.js';
import { stopChild } from '../../support/child.js';
import { TOOLS_BIN } from '../../support/kube.js';
import { caddyfile, nginxConf, traefikDynamic, traefikFlags, type Wiring } from './configs.js';

/** What the app behind the gateways received: the request line and headers (lower-case names). */
export interface Received {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
}

export interface Upstream {
  /** host:port */
  address: string;
  received: Received[];
  stop(): Promise<void>;
}

/** The app: answers every request with 200 and the request as JSON, and remembers it. */
export async function startUpstream(): Promise<Upstream> {
  const received: Received[] = [];
  const server = http.createServer((req, res) => {
    const seen = { method: req.method ?? '', url: req.url ?? '', headers: req.headers };
    received.push(seen);
    req.resume();
    res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(seen));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    address: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    stop: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export type GatewayName = 'nginx' | 'caddy' | 'traefik';

/** A gateway process in front of one app. */
export interface Gateway {
  name: GatewayName;
  /** The app's url, through the gateway. */
  url: string;
  logs: string[];
  stop(): Promise<void>;
}

export const TRAEFIK = path.join(TOOLS_BIN, 'traefik');
const BINARIES: Record<GatewayName, { file: string; missing: string }> = {
  nginx: { file: '/usr/sbin/nginx', missing: "install Debian's nginx (make test-e2e does)" },
  caddy: { file: '/usr/bin/caddy', missing: "install Debian's caddy (make test-e2e does)" },
  traefik: { file: TRAEFIK, missing: 'build it with make test-tools (make test-e2e does)' },
};

/** nginx with the nginx.conf of `dir`; -e: the error log before the configuration is read (else /var/log/nginx/error.log). */
const nginxCommand = (dir: string): string[] => [BINARIES.nginx.file, '-p', dir, '-c', path.join(dir, 'nginx.conf'), '-e', 'stderr'];

/** The command line of `name` with its configuration written into w.dir. */
function commandOf(name: GatewayName, w: Wiring): string[] {
  switch (name) {
    case 'nginx':
      fs.writeFileSync(path.join(w.dir, 'nginx.conf'), nginxConf(w));
      return nginxCommand(w.dir);
    case 'caddy':
      fs.writeFileSync(path.join(w.dir, 'Caddyfile'), caddyfile(w));
      return [BINARIES.caddy.file, 'run', '--config', path.join(w.dir, 'Caddyfile'), '--adapter', 'caddyfile'];
    case 'traefik':
      fs.writeFileSync(path.join(w.dir, 'dynamic.yaml'), traefikDynamic(w));
      return [TRAEFIK, ...traefikFlags(w, path.join(w.dir, 'dynamic.yaml'))];
  }
}

/**
 * Starts `name` on `port` in front of `upstream` for `app`, and waits until a request
 * through it is decided by the box: `readyPath` is one the app's policies allow
 * anyone (so the box must be running, the app and its policies in place).
 */
export async function startGateway(
  name: GatewayName,
  opts: { app: string; port: number; box: string; upstream: string; readyPath: string },
): Promise<Gateway> {
  const binary = BINARIES[name];
  if (!fs.existsSync(binary.file)) throw new Error(`${binary.file} not found: ${binary.missing}`);
  return run(
    name,
    opts.port,
    (dir) => commandOf(name, { app: opts.app, port: opts.port, box: opts.box, upstream: opts.upstream, dir }),
    async (url) => (await fetch(`${url}${opts.readyPath}`)).status === 200,
  );
}

/**
 * Starts Debian's nginx on `port` with the configuration `confOf` writes for its own directory,
 * and waits until `ready` says a request through it is answered as it should be.
 */
export async function startNginx(
  port: number,
  confOf: (dir: string) => string,
  ready: (url: string) => Promise<boolean>,
): Promise<Gateway> {
  if (!fs.existsSync(BINARIES.nginx.file)) throw new Error(`${BINARIES.nginx.file} not found: ${BINARIES.nginx.missing}`);
  return run(
    'nginx',
    port,
    (dir) => {
      fs.writeFileSync(path.join(dir, 'nginx.conf'), confOf(dir));
      return nginxCommand(dir);
    },
    ready,
  );
}

/** Runs the gateway `commandIn` gives for its own new directory, until `ready` or 20 seconds. */
async function run(
  name: GatewayName,
  port: number,
  commandIn: (dir: string) => string[],
  ready: (url: string) => Promise<boolean>,
): Promise<Gateway> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `boxauth-${name}-`));
  let command: string[];
  try {
    command = commandIn(dir);
  } catch (err) {
    fs.rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  const [file, ...args] = command;
  const child = spawn(file!, args, {
    // Caddy keeps its state under XDG_DATA_HOME / XDG_CONFIG_HOME: this gateway's own directory.
    env: { PATH: process.env.PATH ?? '', HOME: dir, XDG_DATA_HOME: dir, XDG_CONFIG_HOME: dir },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const logs: string[] = [];
  const collect = (chunk: Buffer): void => void logs.push(...chunk.toString('utf8').split('\n').filter(Boolean));
  child.stdout.on('data', collect);
  child.stderr.on('data', collect);
  const url = `http://127.0.0.1:${port}`;
  const stop = async (): Promise<void> => {
    await stopChild(child);
    fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    const answered = await eventually(
      `${name} in front of the app`,
      async () => (child.exitCode !== null ? 'exited' : (await ready(url)) && 'ready'),
      20_000,
    );
    if (answered === 'exited') throw new Error(`${name} exited with ${child.exitCode}`);
  } catch (err) {
    await stop();
    throw new Error(`${(err as Error).message}\n${logs.slice(-20).join('\n')}`);
  }
  return { name, url, logs, stop };
}
