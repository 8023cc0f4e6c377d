// What every CLI command is: a name, its help text, and a function of its arguments.
import { errorMessage } from '../errors.js';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { BoxApi, CliError } from './api.js';
import { resolveTarget } from './boxes.js';
import type { Prompter } from './prompt.js';

export interface Io {
  out: (text: string) => void;
  err: (text: string) => void;
  prompter: () => Prompter;
  env: NodeJS.ProcessEnv;
  cwd: string;
}

export interface Command {
  name: string;
  summary: string;
  help: string;
  run(args: string[], io: Io): Promise<void>;
}

export function usage(message: string): CliError {
  return new CliError(message, 2);
}

/** Parses options strictly: an unknown flag is a usage error naming it. */
export function parse<T extends NonNullable<ParseArgsConfig['options']>>(args: string[], options: T) {
  try {
    return parseArgs({ args, options, allowPositionals: true, strict: true });
  } catch (err) {
    throw usage(errorMessage(err));
  }
}

/** Runs `work` against the current box, signing out afterwards. */
export async function withBox<T>(io: Io, work: (api: BoxApi) => Promise<T>): Promise<T> {
  let api: BoxApi;
  try {
    api = new BoxApi(resolveTarget(io.env, io.cwd));
  } catch (err) {
    throw new CliError(errorMessage(err));
  }
  try {
    return await work(api);
  } finally {
    await api.signOut();
  }
}

export function printJson(io: Io, value: unknown): void {
  io.out(`${JSON.stringify(value, null, 2)}\n`);
}

/** Every item of a paged list endpoint (`X-Total-Count` says how many there are). */
export async function allPages<T>(api: BoxApi, path: string): Promise<T[]> {
  const items: T[] = [];
  for (let page = 1; ; page++) {
    const sep = path.includes('?') ? '&' : '?';
    const res = await api.call<T[]>('GET', `${path}${sep}_count=1000&_page=${page}`);
    items.push(...res.body);
    const total = Number(res.headers.get('x-total-count') ?? items.length);
    if (items.length >= total || res.body.length === 0) return items;
  }
}
