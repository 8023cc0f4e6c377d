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
  /** Whether stdout is a terminal (a person reads it): lists then print a table unless --output says otherwise. */
  terminal?: boolean;
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

/**
 * Questions on the terminal; a cancelled one (Ctrl-C) stops the command, and so does
 * input that ends before the answer (exit 2: the command was given nothing to read).
 */
export async function asking<T>(io: Io, questions: (prompter: Prompter) => Promise<T>): Promise<T> {
  const prompter = io.prompter();
  try {
    return await questions(prompter);
  } catch (err) {
    if (errorMessage(err) === 'cancelled') throw new CliError('cancelled');
    throw usage(`no answer: ${errorMessage(err)}`);
  } finally {
    prompter.close();
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
