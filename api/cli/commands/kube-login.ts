// boxauth kube-login: kubectl's credential plugin for box users, and its setup.
import fs from 'node:fs';
import path from 'node:path';
import { errorMessage } from '../../errors.js';
import { CliError } from '../api.js';
import { usage, type Command, type CommandSpec } from '../command.js';
import { execCredential, execInfo } from '../kube/exec-credential.js';
import { setupText, shellQuote } from '../kube/setup.js';
import type { LoginOptions } from '../kube/fetch-tokens.js';
import { cacheFile, defaultCacheDir, readCache, usableIdToken } from '../kube/token-cache.js';

const DEFAULT_SCOPE = 'openid email groups';
const DEFAULT_TIMEOUT_SECONDS = 300;
/** Options of the plugin that setup writes into the kubeconfig's args when given. */
const PASSED_ON = ['scope', 'listen-port', 'cache-dir', 'timeout'] as const;

const SPEC: CommandSpec = {
  name: 'kube-login',
  summary: "kubectl's credential plugin: sign in to a cluster as a box user (and its setup)",
  synopsis: [
    'kube-login --box <url> --client <id> [options]',
    'kube-login setup --box <url> --client <id> [--ca-file <pem>] [--name <user>]',
    '                 [--only user|auth-config]',
  ],
  about: `kubectl's credential plugin for the users of a box: prints an ExecCredential
(client.authentication.k8s.io/v1) whose token is an ID token of the box, for the
API server to check against the box (its AuthenticationConfiguration; see setup).

The tokens are cached per box and client: the ID token is used while it has more
than 10 s left, then the refresh token gets a new one without asking anything. Only
when there is none, or the box refuses it (the session was closed, the user removed),
does a person sign in again: in a browser (a redirect back to 127.0.0.1), or with
--device on any other device. When kubectl runs without a terminal (interactiveMode
IfAvailable) the plugin does not wait for a sign-in: it fails with a message.`,
  options: {
    box: { type: 'string', usage: '--box <url>', summary: "the box's base URL, its issuer (required)" },
    client: {
      type: 'string',
      usage: '--client <id>',
      summary:
        'the box Client kubectl signs in as: no secret, the authorization_code grant (redirect http://127.0.0.1/callback, any port) and/or the device grant, refresh tokens on (required)',
    },
    'ca-file': {
      type: 'string',
      usage: '--ca-file <pem>',
      summary: "the CA that signed the box's certificate, when it is not a public one",
    },
    scope: { type: 'string', usage: '--scope <scopes>', summary: `what to ask for (default "${DEFAULT_SCOPE}")` },
    device: { type: 'boolean', summary: 'sign in with a code on another device instead of a browser here' },
    'listen-port': {
      type: 'string',
      usage: '--listen-port <n>',
      summary: "the port for the browser's redirect back (default 0: any free port)",
    },
    'no-browser': { type: 'boolean', summary: 'print the sign-in address only (default: open $BROWSER, or xdg-open on a desktop)' },
    'cache-dir': {
      type: 'string',
      usage: '--cache-dir <dir>',
      summary: `where tokens are kept, 0700, files 0600 (default ${'$'}XDG_CACHE_HOME/boxauth/kube-login, else ~/.cache/boxauth/kube-login)`,
    },
    timeout: {
      type: 'string',
      usage: '--timeout <seconds>',
      summary: `how long to wait for a person to sign in (default ${DEFAULT_TIMEOUT_SECONDS})`,
    },
    name: { type: 'string', usage: '--name <user>', summary: 'setup: the kubeconfig user to write (default boxauth)' },
    only: {
      type: 'string',
      usage: '--only user|auth-config',
      summary: 'setup: print one of the two, alone, ready to save',
      values: ['user', 'auth-config'],
    },
  },
  count: [0, 1],
  notes: `Setup prints, for this box and client, the kubeconfig user (and the kubectl command
that writes it) and the kube-apiserver AuthenticationConfiguration; --only prints one
of them alone, ready to save. The plugin's other options given to setup go into the
kubeconfig's args.`,
};

function boxUrl(value: string | undefined): string {
  if (!value) throw usage('--box <url> is required: the base URL of the box (its issuer)');
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw usage(`--box: not a URL: ${value}`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw usage(`--box: not an http(s) URL: ${value}`);
  return value.replace(/\/+$/, '');
}

function number(flag: string, value: string | undefined, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < min || n > max) throw usage(`${flag}: expected a whole number from ${min} to ${max}, not "${value}"`);
  return n;
}

/** The plugin's options, as parseArgs gave them (strings and booleans only: none repeats). */
interface KubeLoginValues {
  box?: string;
  client?: string;
  'ca-file'?: string;
  scope?: string;
  device?: boolean;
  'listen-port'?: string;
  'no-browser'?: boolean;
  'cache-dir'?: string;
  timeout?: string;
  name?: string;
  only?: string;
}

export const kubeLoginCommand: Command = {
  spec: SPEC,
  async run(given, io) {
    const values: KubeLoginValues = given.values;
    const [sub] = given.args;
    if (sub !== undefined && sub !== 'setup') throw usage(`unexpected "${sub}"; see boxauth kube-login --help`);
    const box = boxUrl(values.box);
    if (!values.client) throw usage('--client <id> is required: the box Client kubectl signs in as');
    const scope = values.scope ?? DEFAULT_SCOPE;
    if (!scope.split(' ').includes('openid')) throw usage('--scope must include openid: the plugin hands kubectl an ID token');
    const caFile = values['ca-file'] === undefined ? undefined : path.resolve(io.cwd, values['ca-file']);
    // Checked for setup too: it writes them into the kubeconfig, where a bad one would fail every kubectl run.
    const listenPort = number('--listen-port', values['listen-port'], 0, 0, 65535);
    const timeoutSeconds = number('--timeout', values.timeout, DEFAULT_TIMEOUT_SECONDS, 1, 86_400);

    if (sub === 'setup') {
      if (values.only !== undefined && values.only !== 'user' && values.only !== 'auth-config') {
        throw usage('--only: "user" or "auth-config"');
      }
      let caPem: string | undefined;
      try {
        caPem = caFile === undefined ? undefined : fs.readFileSync(caFile, 'utf8');
      } catch (err) {
        throw new CliError(`cannot read --ca-file ${caFile}: ${errorMessage(err)}`, 1, { cause: err });
      }
      if (!box.startsWith('https:'))
        io.err('note: kube-apiserver accepts only https issuers; serve the box over HTTPS (BOXAUTH_TLS_CERT_FILE)\n');
      const extraArgs = [
        ...(values.device ? ['--device'] : []),
        ...(values['no-browser'] ? ['--no-browser'] : []),
        // kubectl runs the plugin from wherever it is run: paths must be absolute.
        ...PASSED_ON.filter((flag) => values[flag] !== undefined).map(
          (flag) => `--${flag}=${flag === 'cache-dir' ? path.resolve(io.cwd, values[flag]!) : values[flag]}`,
        ),
      ];
      return io.out(setupText({ box, client: values.client, caFile, caPem, name: values.name ?? 'boxauth', extraArgs }, values.only));
    }

    if (values.name !== undefined || values.only !== undefined) throw usage('--name and --only are options of setup');
    const info = execInfo(io.env);
    const cacheDir = values['cache-dir'] ? path.resolve(io.cwd, values['cache-dir']) : defaultCacheDir(io.env);
    const options: LoginOptions = {
      box,
      client: values.client,
      caFile,
      scope,
      device: values.device ?? false,
      listenPort,
      openBrowser: !values['no-browser'],
      cacheDir,
      cacheFile: cacheFile(cacheDir, box, values.client),
      timeoutMs: timeoutSeconds * 1000,
      byHand: ['boxauth', 'kube-login', ...given.raw].map(shellQuote).join(' '),
    };
    // Most runs end at the cache, without loading what a refresh or a sign-in needs.
    const token =
      usableIdToken(readCache(options.cacheFile, { issuer: box, client_id: values.client, scope }), Date.now()) ??
      (await (await import('../kube/fetch-tokens.js')).fetchIdToken(options, io, info.interactive));
    io.out(`${JSON.stringify(execCredential(info.apiVersion, token.idToken, token.exp))}\n`);
  },
};
