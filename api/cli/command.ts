// What every CLI command is: a name, its help text, and a function of its arguments.
import { errorMessage } from '../errors.js';
import { parseArgs } from 'node:util';
import { BoxApi, CliError } from './api.js';
import { resolveTarget } from './boxes.js';
import type { Prompter } from './prompt.js';
import { printable } from './printable.js';

export interface Io {
  out: (text: string) => void;
  err: (text: string) => void;
  prompter: () => Prompter;
  env: NodeJS.ProcessEnv;
  cwd: string;
  /** Whether stdout is a terminal (a person reads it): lists then print a table unless --output says otherwise. */
  terminal?: boolean;
}

/** What an option of a command was given as. */
export type Values = Record<string, string | boolean | string[] | undefined>;

/** A command: what it declares (its help, its options and subcommands, its completions) and what it does. */
export interface Command {
  spec: CommandSpec;
  run(given: Given, io: Io): Promise<void>;
}

export function usage(message: string): CliError {
  return new CliError(message, 2);
}

/** An option of a command, as parseArgs takes it, with its line in the help. */
export interface OptionSpec {
  type: 'string' | 'boolean';
  short?: string;
  multiple?: boolean;
  /** How the help writes it, e.g. `--group <name|id>` (default: `--name`, with `<value>` for a string). */
  usage?: string;
  summary: string;
  /** Values the shell may complete (`-o`: table json yaml). */
  values?: readonly string[];
}

/** A subcommand: its arguments and the options that apply to it; any other is refused (exit 2). */
export interface VerbSpec {
  /** Its arguments as the help writes them, e.g. `<id|email> <group>...`. */
  args?: string;
  /** How many arguments it takes: [at least, at most]. */
  count?: readonly [number, number];
  /** The command's options that apply to it. */
  options?: readonly string[];
  summary: string;
  /** More lines of the help for it: other ways to call it, e.g. `new <email>:<password>`. */
  more?: readonly (readonly [string, string])[];
  /** Other names of it (`close` for `delete`); one help line, one command. */
  aliases?: readonly string[];
}

/**
 * What a command declares once: its help, the strict reading of its arguments (one place for
 * every command) and the shell's completions are all made from it.
 */
export interface CommandSpec {
  name: string;
  /** Other names of the same command, as kubectl takes `pods`, `pod` and `po`. */
  aliases?: readonly string[];
  summary: string;
  /** The usage line(s) after `boxauth `; default: `<name> <subcommand> [options]`. */
  synopsis?: readonly string[];
  /** Prose under the usage line. */
  about?: string;
  options: Record<string, OptionSpec>;
  /** Its subcommands; none: the command takes its options and `count` arguments. */
  verbs?: Record<string, VerbSpec>;
  /** The subcommand run when none is given (`keys` lists). */
  defaultVerb?: string;
  /** Without subcommands: how many arguments, and how the help writes them. */
  count?: readonly [number, number];
  args?: string;
  /** Prose after the options: examples, notes. */
  notes?: string;
  /** Words the shell may complete as its first argument, for a command without subcommands (`completion bash`). */
  completes?: readonly string[];
}

/** What a command was given, read strictly against its spec. */
export interface Given {
  verb: string;
  args: string[];
  values: Values;
  /** The arguments as typed, after the command's name. */
  raw: string[];
}

const HELP_OPTION: OptionSpec = { type: 'boolean', short: 'h', summary: 'this text' };

/** The output option of lists and gets, and of changes (`-o json|yaml`: the record as written). */
export const OUTPUT: OptionSpec = {
  type: 'string',
  short: 'o',
  usage: '-o, --output table|json|yaml',
  summary: 'lists and gets: a table on a terminal, else JSON; changes: the record as written (json or yaml), else a line',
  values: ['table', 'json', 'yaml'],
};

function optionUsage(name: string, spec: OptionSpec): string {
  if (spec.usage) return spec.usage;
  const long = `--${name}${spec.type === 'string' ? ' <value>' : ''}`;
  return spec.short ? `-${spec.short}, ${long}` : long;
}

/** Two columns, the second aligned; a term too wide gets its own line. Descriptions are wrapped at WIDTH. */
export function helpColumns(rows: readonly (readonly [string, string])[], maxTerm = 34): string {
  const width = Math.min(maxTerm, Math.max(...rows.map(([term]) => term.length)));
  const column = 2 + width + 2;
  const lines: string[] = [];
  for (const [term, text] of rows) {
    const wrapped = wrap(text, HELP_WIDTH - column);
    if (term.length > width) {
      lines.push(`  ${term}`);
      for (const line of wrapped) lines.push(`${' '.repeat(column)}${line}`);
    } else {
      wrapped.forEach((line, i) => lines.push(i === 0 ? `  ${term.padEnd(width)}  ${line}` : `${' '.repeat(column)}${line}`));
    }
  }
  return lines.map((line) => line.trimEnd()).join('\n') + '\n';
}

/** The widest a line of help is. */
export const HELP_WIDTH = 100;

function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/ +/)) {
    if (line && line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  lines.push(line);
  return lines;
}

/** The names a command answers to. */
export function names(spec: CommandSpec): string[] {
  return [spec.name, ...(spec.aliases ?? [])];
}

/** The help of a command, made from its spec. */
export function commandHelp(spec: CommandSpec): string {
  const synopsis = spec.synopsis ?? [
    spec.verbs ? `${spec.name} <subcommand> [options]` : `${spec.name}${spec.args ? ` ${spec.args}` : ''} [options]`,
  ];
  const parts = [synopsis.map((line, i) => `${i === 0 ? 'Usage: ' : '       '}boxauth ${line}`).join('\n') + '\n'];
  if (spec.aliases?.length) parts.push(`Also: ${spec.aliases.map((a) => `boxauth ${a}`).join(', ')} (the same command).\n`);
  if (spec.about) parts.push(spec.about.trimEnd() + '\n');
  if (spec.verbs) {
    const rows: [string, string][] = [];
    for (const [verb, v] of Object.entries(spec.verbs)) {
      const also = v.aliases?.length ? ` (also: ${v.aliases.join(', ')})` : '';
      rows.push([`${spec.name} ${verb}${v.args ? ` ${v.args}` : ''}`, `${v.summary}${also}`]);
      for (const [usage, text] of v.more ?? []) rows.push([`${spec.name} ${usage}`, text]);
    }
    parts.push(`Subcommands:\n${helpColumns(rows)}`);
  }
  const options = Object.entries({ ...spec.options, help: HELP_OPTION }).map(([name, o]): [string, string] => {
    const which = spec.verbs ? verbsTaking(spec, name) : [];
    return [optionUsage(name, o), which.length && name !== 'help' ? `${which.join(', ')}: ${o.summary}` : o.summary];
  });
  parts.push(`Options:\n${helpColumns(options)}`);
  if (spec.notes) parts.push(spec.notes.trimEnd() + '\n');
  return parts.join('\n');
}

/** The subcommands an option applies to, when not to all of them. */
function verbsTaking(spec: CommandSpec, option: string): string[] {
  const verbs = Object.entries(spec.verbs ?? {});
  const taking = verbs.filter(([, v]) => v.options?.includes(option)).map(([name]) => name);
  return taking.length === verbs.length ? [] : taking;
}

/**
 * Reads a command's arguments strictly, in one place for every command: an option the command
 * does not have, an option its subcommand does not take, a missing value, and an argument too
 * many or too few are each a usage error (exit 2) that names them.
 */
export function readCommand(spec: CommandSpec, args: string[]): Given | 'help' {
  const options = Object.fromEntries(
    Object.entries({ ...spec.options, help: HELP_OPTION }).map(([name, o]) => [
      name,
      { type: o.type, ...(o.short ? { short: o.short } : {}), ...(o.multiple ? { multiple: true } : {}) },
    ]),
  );
  let parsed;
  try {
    parsed = parseArgs({ args, options, allowPositionals: true, strict: true, tokens: true });
  } catch (err) {
    throw usage(parseError(errorMessage(err)));
  }
  const { values, positionals, tokens } = parsed;
  const given = [...new Set(tokens.filter((t) => t.kind === 'option').map((t) => t.name))];
  if (values.help) return 'help';
  let verb = '';
  let rest = positionals;
  let count = spec.count ?? [0, 0];
  let allowed: readonly string[] = Object.keys(spec.options);
  let usageLine = `boxauth ${spec.name}${spec.args ? ` ${spec.args}` : ''}`;
  if (spec.verbs) {
    const [first, ...others] = positionals;
    if (first === 'help') return 'help';
    if (first === undefined && spec.defaultVerb === undefined) {
      if (given.length) throw usage(`${given.map((o) => `--${o}`).join(', ')} without a subcommand; see boxauth ${spec.name} help`);
      return 'help';
    }
    const name = first === undefined ? spec.defaultVerb! : canonicalVerb(spec, first);
    if (name === undefined) throw usage(`unknown subcommand "${spec.name} ${printable(first!)}"; see boxauth ${spec.name} help`);
    const v = spec.verbs[name]!;
    verb = name;
    rest = first === undefined ? [] : others;
    count = v.count ?? [0, 0];
    allowed = v.options ?? [];
    usageLine = `boxauth ${spec.name} ${name}${v.args ? ` ${v.args}` : ''}`;
  }
  const refused = given.filter((o) => o !== 'help' && !allowed.includes(o));
  if (refused.length) {
    const what = refused.map((o) => `--${o}`).join(', ');
    throw usage(`${what} ${refused.length === 1 ? 'does' : 'do'} not apply to ${spec.name}${verb ? ` ${verb}` : ''} (usage: ${usageLine})`);
  }
  if (rest.length < count[0]) throw usage(`usage: ${usageLine}`);
  if (rest.length > count[1]) {
    const extra = rest.slice(count[1]).map((a) => `"${printable(a)}"`);
    throw usage(`unexpected argument${extra.length > 1 ? 's' : ''} ${extra.join(' ')} (usage: ${usageLine})`);
  }
  return { verb, args: rest, values: values as Values, raw: args };
}

function canonicalVerb(spec: CommandSpec, name: string): string | undefined {
  if (spec.verbs?.[name]) return name;
  return Object.entries(spec.verbs ?? {}).find(([, v]) => v.aliases?.includes(name))?.[0];
}

/** node's parseArgs messages, said shortly: `Unknown option '--x'. To specify…` becomes `unknown option --x`. */
function parseError(message: string): string {
  const unknown = /^Unknown option '([^']+)'/.exec(message);
  if (unknown) return `unknown option ${unknown[1]}`;
  const missing = /^Option '(?:-\w, )?(--[^ ]+) <value>' argument missing/.exec(message);
  if (missing) return `${missing[1]} needs a value`;
  return message;
}

/** A string option's value. */
export function text(values: Values, name: string): string | undefined {
  const value = values[name];
  return typeof value === 'string' ? value : undefined;
}

/** A repeatable string option's values. */
export function texts(values: Values, name: string): string[] {
  const value = values[name];
  return Array.isArray(value) ? value.map(String) : [];
}

/** A boolean option. */
export function flag(values: Values, name: string): boolean {
  return values[name] === true;
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
