// The registry of a host: which boxes it serves, the host names each answers at,
// and each box's variables (the ones its dedicated Deployment would have). The
// operator writes it into a Secret the host mounts (docs/kubernetes/hosted-boxes.md);
// on a laptop it is a file of one's own. Read whole, checked whole: a registry
// with one bad entry keeps the host on the one it had (the log says why), so a
// typo never takes every box down.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Env } from '../config.js';

export interface RegistryEntry {
  /** The box's name, `<namespace>/<name>` (its BOXAUTH_BOX). */
  box: string;
  /** The Host header values its requests come with, lower case: `name` or `name:port`. */
  hostnames: string[];
  /** Its variables; the host's own replace the process-wide ones (HOST_WIDE). */
  env: Env;
}

export class RegistryError extends Error {}

/**
 * Variables of the process, not of a box: a hosted box's entry may carry them (it is the
 * dedicated Deployment's environment), and the host's own apply.
 */
export const HOST_WIDE = [
  'BOXAUTH_PORT',
  'BOXAUTH_HOST',
  'BOXAUTH_METRICS_PORT',
  'BOXAUTH_GRPC_PORT',
  'BOXAUTH_WORKERS',
  'BOXAUTH_DATA_DIR',
  'BOXAUTH_SHUTDOWN_DELAY_MS',
  'BOXAUTH_SHUTDOWN_TIMEOUT_MS',
  'BOXAUTH_HOSTED_BOXES',
  'BOXAUTH_TLS_CERT_FILE',
  'BOXAUTH_TLS_KEY_FILE',
] as const;

/** Connections of a hosted box's pool, at most (BOXAUTH_DB_POOL_SIZE of a box process: 10). */
export const HOSTED_POOL_SIZE = '4';

const HOSTNAME = /^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?(:[0-9]{1,5})?$/;
const BOX_NAME = /^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?\/[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$|^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/** The entries of a registry's text; throws RegistryError naming the first fault. */
export function parseRegistry(text: string): RegistryEntry[] {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new RegistryError(`not JSON: ${(err as Error).message}`);
  }
  const boxes = (doc as { boxes?: unknown } | null)?.boxes;
  if (!Array.isArray(boxes)) throw new RegistryError('expected {"boxes": [...]}');
  const byHost = new Map<string, string>();
  const names = new Set<string>();
  return boxes.map((raw: unknown, i) => {
    const where = `boxes[${i}]`;
    if (typeof raw !== 'object' || raw === null) throw new RegistryError(`${where}: expected an object`);
    const { box, hostnames, env } = raw as Record<string, unknown>;
    if (typeof box !== 'string' || !BOX_NAME.test(box)) throw new RegistryError(`${where}.box: expected <namespace>/<name>`);
    if (names.has(box)) throw new RegistryError(`${where}.box: ${box} is listed twice`);
    names.add(box);
    if (!Array.isArray(hostnames) || hostnames.length === 0) throw new RegistryError(`${where}.hostnames: expected a non-empty list`);
    const hosts = hostnames.map((h: unknown, j) => {
      if (typeof h !== 'string' || !HOSTNAME.test(h.toLowerCase())) throw new RegistryError(`${where}.hostnames[${j}]: not a host name`);
      const host = h.toLowerCase();
      const owner = byHost.get(host);
      // Two boxes at one name: whichever answered would be a guess. Refused whole.
      if (owner !== undefined && owner !== box) throw new RegistryError(`${where}.hostnames[${j}]: ${host} is ${owner}'s too`);
      byHost.set(host, box);
      return host;
    });
    if (typeof env !== 'object' || env === null || Array.isArray(env)) throw new RegistryError(`${where}.env: expected an object`);
    for (const [name, value] of Object.entries(env)) {
      if (typeof value !== 'string') throw new RegistryError(`${where}.env.${name}: expected a string`);
    }
    return { box, hostnames: [...new Set(hosts)], env: env as Env };
  });
}

/** A box's own variables: its entry's, with the host's process-wide ones in their place. */
export function boxEnv(entry: RegistryEntry, hostEnv: Env): Env {
  const env: Env = { ...entry.env, BOXAUTH_BOX: entry.box };
  for (const name of HOST_WIDE) {
    if (hostEnv[name] === undefined) delete env[name];
    else env[name] = hostEnv[name];
  }
  delete env.BOXAUTH_HOSTED_BOXES;
  // Its own files (an admin password, root secret or factor key it generates, api/bootstrap.ts) in a
  // directory of its own under the host's: never another box's to read, nor written by two boxes at once.
  // A box's name has no `_` (Kubernetes names do not), so `ns_name` names one box.
  env.BOXAUTH_DATA_DIR = path.join(hostEnv.BOXAUTH_DATA_DIR ?? '.boxauth', 'boxes', entry.box.replace('/', '_'));
  // A hosted box answers through the host's one port: no gRPC port of its own (dedicated boxes serve ext_authz).
  env.BOXAUTH_GRPC_PORT = '0';
  env.BOXAUTH_WORKERS = '1';
  // The host's boxes share the database server's connections: a box's pool is small unless its entry says.
  env.BOXAUTH_DB_POOL_SIZE ??= HOSTED_POOL_SIZE;
  return env;
}

/**
 * Reads `file` now and whenever it changes (checked every `everyMs`: a Secret volume's file is
 * replaced by a symlink swap, which no watch on the old file sees), calling `onEntries` with each
 * registry that parses and `onFault` with each that does not.
 */
export function watchRegistry(
  file: string,
  onEntries: (entries: RegistryEntry[]) => void,
  onFault: (err: Error) => void,
  everyMs = 1000,
): { stop(): void; ready: Promise<void> } {
  let seen = '';
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const check = async (): Promise<void> => {
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (err) {
      text = `\0${(err as Error).message}`; // said once, as a changed text is
    }
    if (text === seen) return;
    seen = text;
    if (text.startsWith('\0')) return onFault(new RegistryError(`cannot read ${file}: ${text.slice(1)}`));
    let entries: RegistryEntry[];
    try {
      entries = parseRegistry(text);
    } catch (err) {
      return onFault(err as Error);
    }
    onEntries(entries);
  };
  const loop = (): void => {
    if (stopped) return;
    timer = setTimeout(() => void check().finally(loop), everyMs);
    timer.unref();
  };
  const ready = check().finally(loop);
  return {
    ready,
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
    },
  };
}
