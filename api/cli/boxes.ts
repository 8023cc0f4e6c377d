// The boxes the CLI knows: ~/.config/boxauth/config.json (mode 0600: it holds
// client secrets), the current one, and the environment that overrides it.
import { errorMessage } from '../errors.js';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { writePrivateFile } from './private-file.js';

export interface BoxEntry {
  url: string;
  client_id: string;
  client_secret: string;
}

export interface BoxesFile {
  current?: string;
  boxes: Record<string, BoxEntry>;
}

export interface Target extends BoxEntry {
  /** Where the target came from, for messages. */
  source: string;
  name: string | undefined;
}

export function configPath(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CONFIG_HOME || path.join(env.HOME || os.homedir(), '.config');
  return path.join(base, 'boxauth', 'config.json');
}

export function readBoxes(file = configPath()): BoxesFile {
  try {
    const parsed = JSON.parse(fs.readFileSync(file, 'utf8')) as BoxesFile;
    return { current: parsed.current, boxes: parsed.boxes ?? {} };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { boxes: {} };
    throw new Error(`cannot read ${file}: ${errorMessage(err)}`, { cause: err });
  }
}

export function writeBoxes(content: BoxesFile, file = configPath()): void {
  writePrivateFile(file, `${JSON.stringify(content, null, 2)}\n`);
}

/** The name `box list` shows for the box of `make run`; `box use local` goes back to it. */
export const LOCAL_BOX = 'local';

/** The box `make run` serves from `cwd`: its root client, as the box wrote it (.boxauth/root-client.json). */
export function localBox(cwd: string): { file: string; box: BoxEntry } | undefined {
  const file = path.join(cwd, '.boxauth', 'root-client.json');
  let creds: { client_id: string; client_secret: string; base_url?: string };
  try {
    creds = JSON.parse(fs.readFileSync(file, 'utf8')) as typeof creds;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new Error(`cannot read ${file}: ${errorMessage(err)}`, { cause: err });
  }
  return { file, box: { url: creds.base_url ?? 'http://localhost:8080', client_id: creds.client_id, client_secret: creds.client_secret } };
}

/** The configured box commands talk to, when there is one (a current box that was removed is none). */
export function currentBox(file: BoxesFile): string | undefined {
  return file.current !== undefined && file.boxes[file.current] ? file.current : undefined;
}

/**
 * The box to talk to: the current box of the config file, with BOXAUTH_URL,
 * BOXAUTH_CLIENT_ID and BOXAUTH_CLIENT_SECRET overriding its fields; failing
 * that, the box `make run` serves from this directory (.boxauth/root-client.json).
 */
export function resolveTarget(env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): Target {
  const file = readBoxes(configPath(env));
  const name = currentBox(file);
  let base: BoxEntry | undefined = name ? file.boxes[name] : undefined;
  let source = name ? `box "${name}" of ${configPath(env)}` : '';
  if (!base) {
    const local = localBox(cwd);
    if (local) {
      base = local.box;
      source = local.file;
    }
  }
  const target = {
    url: env.BOXAUTH_URL || base?.url,
    client_id: env.BOXAUTH_CLIENT_ID || base?.client_id,
    client_secret: env.BOXAUTH_CLIENT_SECRET || base?.client_secret,
  };
  if (env.BOXAUTH_URL || env.BOXAUTH_CLIENT_ID || env.BOXAUTH_CLIENT_SECRET)
    source = source ? `${source} and the environment` : 'the environment';
  if (!target.url || !target.client_id || !target.client_secret) {
    throw new Error(
      'no box to talk to: run `boxauth box add <name> <url> --client-id <id> --client-secret <secret>`, ' +
        'or set BOXAUTH_URL, BOXAUTH_CLIENT_ID and BOXAUTH_CLIENT_SECRET',
    );
  }
  return { url: target.url.replace(/\/+$/, ''), client_id: target.client_id, client_secret: target.client_secret, source, name };
}
