// boxauth client …, policy …, app …, idp … and session …: the resource API from the shell.
import { errorMessage } from '../../errors.js';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { readYaml } from '../../yaml.js';
import { CliError } from '../api.js';
import { asking, parse, usage, withBox, type Command, type Io } from '../command.js';
import { outputHelp, OUTPUT_OPTION, outputFormat, printList, printRecord, type Column } from '../output.js';

type Kind = 'Client' | 'AccessPolicy' | 'App' | 'IdentityProvider';

/** What an apply file holds for one kind: its records, and what was done with the rest. */
export interface Manifests {
  items: { id: string; body: Record<string, unknown>; generatedSecret?: string }[];
  /** Documents of other kinds, with why each was left (printed to stderr). */
  skipped: string[];
}

type KubeDocument = Record<string, unknown> & {
  metadata?: { name?: string };
  spec?: Record<string, unknown>;
  data?: Record<string, string>;
  stringData?: Record<string, string>;
};

/** The values of a Kubernetes Secret document: stringData over base64 data, as the API server merges them. */
function secretValues(doc: KubeDocument): Record<string, string> {
  const data = Object.fromEntries(Object.entries(doc.data ?? {}).map(([k, v]) => [k, Buffer.from(String(v), 'base64').toString('utf8')]));
  return { ...data, ...(doc.stringData ?? {}) };
}

type SecretRef = { name: string; key?: string };
type Secrets = Map<string, Record<string, string>>;

/** The value of the Secret a resource's secretRef names, as the operator would read it; the Secret must be in the same file. */
function referencedSecret(ref: SecretRef, defaultKey: string, secrets: Secrets, file: string, what: string): string {
  const values = secrets.get(ref.name);
  const key = ref.key ?? defaultKey;
  if (!values)
    throw new CliError(
      `${file}: ${what} reads its secret from Secret ${ref.name}, which is not in this file: add it, or put the secret in the REST form`,
    );
  if (values[key] === undefined) throw new CliError(`${file}: Secret ${ref.name} has no key "${key}" (${what}'s secretRef.key)`);
  return values[key];
}

/**
 * A Kubernetes Client's spec as a REST body. The secret comes as the operator would get it: from the Secret
 * its secretRef names (which must be in the same file), or generated when the operator would generate one
 * (client_credentials, no auth.workload, generateSecret not false).
 */
function clientBody(spec: Record<string, unknown>, name: string, secrets: Secrets, file: string) {
  const { secretRef, generateSecret, ...body } = spec as Record<string, unknown> & { secretRef?: SecretRef; generateSecret?: boolean };
  if (secretRef) return { body: { ...body, secret: referencedSecret(secretRef, 'client-secret', secrets, file, `Client ${name}`) } };
  const grants = (body.grant_types as string[] | undefined) ?? [];
  const workload = (body.auth as { workload?: unknown } | undefined)?.workload !== undefined;
  if (grants.includes('client_credentials') && !workload && generateSecret !== false) {
    const secret = randomBytes(32).toString('base64url'); // as the operator generates one
    return { body: { ...body, secret }, generatedSecret: secret };
  }
  return { body };
}

/** A Kubernetes IdentityProvider's spec as a REST body: its client secret or bind password from the Secret its secretRef names. */
function providerBody(spec: Record<string, unknown>, name: string, secrets: Secrets, file: string) {
  const { secretRef, ...body } = spec as Record<string, unknown> & { secretRef?: SecretRef };
  if (!secretRef) return { body };
  const key = body.type === 'ldap' ? 'bind-password' : 'client-secret';
  return { body: { ...body, secret: referencedSecret(secretRef, key, secrets, file, `IdentityProvider ${name}`) } };
}

const KUBE_BODIES: Partial<Record<Kind, typeof clientBody>> = { Client: clientBody, IdentityProvider: providerBody };

/**
 * The resources of `kind` in a YAML or JSON file (one or many documents, or JSON arrays), in REST form
 * ({id, resourceType, …}) or as Kubernetes manifests (metadata.name, spec), such as the files of examples/.
 * Kubernetes documents of other kinds are skipped and said so; a Secret is read when a Client names it.
 */
export function readManifests(text: string, kind: Kind, file: string): Manifests {
  let values: unknown[];
  try {
    values = readYaml(text);
  } catch (err) {
    throw new CliError(`${file}: ${errorMessage(err)}`);
  }
  const docs: KubeDocument[] = [];
  for (const value of values) {
    for (const item of Array.isArray(value) ? value : [value]) {
      if (item === null || item === undefined) continue;
      if (typeof item !== 'object') throw new CliError(`${file}: expected ${kind} objects`);
      docs.push(item as KubeDocument);
    }
  }
  const secrets = new Map(docs.filter((d) => d.kind === 'Secret' && d.metadata?.name).map((d) => [d.metadata!.name!, secretValues(d)]));
  const out: Manifests = { items: [], skipped: [] };
  for (const r of docs) {
    if (r.apiVersion !== undefined || r.kind !== undefined) {
      if (r.kind !== kind) {
        const why = r.kind === 'Secret' ? `read for the ${kind === 'Client' ? 'clients' : 'providers'} that name it` : `not a ${kind}`;
        out.skipped.push(`${String(r.kind)} ${r.metadata?.name ?? ''} (${why})`.replace('  ', ' '));
        continue;
      }
      const name = r.metadata?.name;
      if (!name) throw new CliError(`${file}: a ${kind} without metadata.name`);
      const spec = r.spec ?? {};
      const toBody = KUBE_BODIES[kind];
      out.items.push(toBody ? { id: name, ...toBody(spec, name, secrets, file) } : { id: name, body: spec });
    } else {
      if (r.resourceType !== undefined && r.resourceType !== kind)
        throw new CliError(`${file}: a ${String(r.resourceType)} is not a ${kind}`);
      if (typeof r.id !== 'string' || !r.id) throw new CliError(`${file}: every ${kind} needs an id`);
      out.items.push({ id: r.id, body: r });
    }
  }
  return out;
}

function readInput(file: string): string {
  try {
    return fs.readFileSync(file === '-' ? 0 : file, 'utf8');
  } catch (err) {
    throw new CliError(`cannot read ${file}: ${errorMessage(err)}`);
  }
}

type Resource = Record<string, unknown> & { id: string };
type Link = { id: string; resourceType: string };

/** The columns a person looks for first; --output json or yaml shows every field. */
const COLUMNS: Record<Kind, Column<Resource>[]> = {
  Client: [
    { header: 'ID', cell: (c) => c.id },
    { header: 'GRANT_TYPES', cell: (c) => c.grant_types },
    { header: 'DESCRIPTION', cell: (c) => c.description },
  ],
  AccessPolicy: [
    { header: 'ID', cell: (p) => p.id },
    { header: 'ENGINE', cell: (p) => p.engine },
    { header: 'APP', cell: (p) => p.app },
    { header: 'LINK', cell: (p) => ((p.link ?? []) as Link[]).map((l) => `${l.resourceType}/${l.id}`) },
    { header: 'DESCRIPTION', cell: (p) => p.description },
  ],
  App: [
    { header: 'ID', cell: (a) => a.id },
    { header: 'URLS', cell: (a) => a.urls },
    { header: 'SIGN_IN', cell: (a) => (a.signIn as { client?: string } | undefined)?.client },
    { header: 'DESCRIPTION', cell: (a) => a.description },
  ],
  IdentityProvider: [
    { header: 'ID', cell: (p) => p.id },
    { header: 'TYPE', cell: (p) => p.type },
    { header: 'DISPLAY_NAME', cell: (p) => p.displayName },
    { header: 'DISABLED', cell: (p) => p.disabled ?? false },
    { header: 'MANAGED_BY', cell: (p) => (p.meta as { managedBy?: string } | undefined)?.managedBy },
  ],
};

/** What a kind adds to the subcommands every kind has: more help, and subcommands of its own. */
interface KindExtras {
  summary: string;
  subcommands: string;
  about: string;
  options: string;
  /** Runs a subcommand of its own; false: not one of them. */
  run(sub: string, id: string | undefined, values: { 'secret-stdin'?: boolean }, io: Io): Promise<boolean>;
}

function resourceCommand(name: 'client' | 'policy' | 'app' | 'idp', kind: Kind, extras?: KindExtras): Command {
  const help = `Usage: boxauth ${name} <subcommand>

Subcommands:
  ${name} list              the ${kind} resources of the current box
  ${name} get <id>          one ${kind}
  ${name} apply -f <file>   create or replace the ${kind}s in a YAML or JSON file (several documents
                      allowed; "-" reads stdin). Kubernetes manifests (kind: ${kind}) work too.
  ${name} delete <id>       delete ${/^[AEIOU]/.test(kind) ? 'an' : 'a'} ${kind}
${extras?.subcommands ?? ''}
Options:
${outputHelp(33, 'list and get')}
${extras?.options ?? ''}${extras?.about ?? ''}`;
  return {
    name,
    summary: extras?.summary ?? `list and apply ${kind} resources`,
    help,
    async run(args: string[], io: Io) {
      const { values, positionals } = parse(args, {
        filename: { type: 'string', short: 'f' },
        ...(extras ? { 'secret-stdin': { type: 'boolean' } } : {}),
        ...OUTPUT_OPTION,
        help: { type: 'boolean', short: 'h' },
      });
      const [sub, id] = positionals;
      if (values.help || !sub || sub === 'help') return io.out(help);
      if (extras && (await extras.run(sub, id, values as { 'secret-stdin'?: boolean }, io))) return;
      const format = outputFormat(values.output, io);
      switch (sub) {
        case 'list':
          return withBox(io, async (api) => {
            const res = await api.call<{ entry: { resource: Resource }[] }>('GET', `/${kind}?_count=1000`);
            printList(
              io,
              format,
              res.body.entry.map((e) => e.resource),
              COLUMNS[kind],
            );
          });
        case 'get':
          if (!id) throw usage(`usage: boxauth ${name} get <id>`);
          return withBox(io, async (api) =>
            printRecord(io, format, (await api.call<Resource>('GET', `/${kind}/${encodeURIComponent(id)}`)).body, COLUMNS[kind]),
          );
        case 'delete':
          if (!id) throw usage(`usage: boxauth ${name} delete <id>`);
          return withBox(io, async (api) => {
            await api.call('DELETE', `/${kind}/${encodeURIComponent(id)}`);
            io.out(`${name}/${id} deleted\n`);
          });
        case 'apply': {
          if (!values.filename) throw usage(`usage: boxauth ${name} apply -f <file>`);
          const { items, skipped } = readManifests(readInput(values.filename), kind, values.filename);
          for (const what of skipped) io.err(`skipped ${what}\n`);
          if (!items.length) throw new CliError(`${values.filename}: no ${kind} in it`);
          return withBox(io, async (api) => {
            for (const m of items) {
              let res;
              try {
                res = await api.call('PUT', `/${kind}/${encodeURIComponent(m.id)}`, m.body);
              } catch (err) {
                throw new CliError(`${name}/${m.id}: ${errorMessage(err)}`);
              }
              io.out(`${name}/${m.id} ${res.status === 201 ? 'created' : 'configured'}\n`);
              // Shown once, as the operator would have written it into a Secret: the box keeps only its hash.
              if (m.generatedSecret) io.out(`  generated secret (shown once, keep it): ${m.generatedSecret}\n`);
            }
          });
        }
        default:
          throw usage(`unknown subcommand "${name} ${sub}"; see boxauth ${name} help`);
      }
    },
  };
}

export const clientCommand = resourceCommand('client', 'Client');
export const policyCommand = resourceCommand('policy', 'AccessPolicy');
export const appCommand = resourceCommand('app', 'App');

/** The secret to give a provider: stdin as a whole, or typed without echo; never an argument (shell history, ps). */
async function providerSecretInput(io: Io, fromStdin: boolean): Promise<string> {
  const secret = fromStdin
    ? (await asking(io, (p) => p.readAll())).replace(/\r?\n$/, '')
    : await asking(io, (p) => p.askHidden('Client secret or bind password: '));
  if (!secret) throw usage(fromStdin ? '--secret-stdin read no secret; nothing changed' : 'no secret typed; nothing changed');
  return secret;
}

export const idpCommand = resourceCommand('idp', 'IdentityProvider', {
  summary: 'list and apply identity providers (where people sign in with an account they have)',
  subcommands: `  idp set-secret <id>   give the provider a new client secret (oidc, oauth2, github) or bind
                      password (ldap): typed without echo, or --secret-stdin
`,
  options: `  --secret-stdin                 set-secret reads the secret from stdin (a pipe or a file)
`,
  about: `
An IdentityProvider is somewhere people already have an account: an OpenID Connect provider
(type oidc), an OAuth 2.0 service (oauth2), GitHub (github) or an LDAP directory (ldap). The
sign-in page offers each; only a writer the box lets do everything may write one.

Its secret is write-only: get and list never show it, and it is never an argument. Give it in
the file (REST form: "secret"; Kubernetes form: the Secret its secretRef names, in the same
file, key client-secret, for ldap bind-password), or afterwards with set-secret. Applying a
provider without one keeps the secret it has.

Examples:
  boxauth idp apply -f examples/identityprovider.yaml
  boxauth idp list -o table
  boxauth idp set-secret corp-sso                       # asks for it
  pass show corp-sso | boxauth idp set-secret corp-sso --secret-stdin
`,
  async run(sub, id, values, io) {
    if (sub !== 'set-secret') return false;
    if (!id) throw usage('usage: boxauth idp set-secret <id> [--secret-stdin]');
    const secret = await providerSecretInput(io, values['secret-stdin'] === true);
    await withBox(io, async (api) => {
      const path = `/IdentityProvider/${encodeURIComponent(id)}`;
      const { meta: _meta, ...provider } = (await api.call<Resource>('GET', path)).body;
      await api.call('PUT', path, { ...provider, secret });
    });
    io.out(`idp/${id} secret set\n`);
    return true;
  },
});

const SESSION_HELP = `Usage: boxauth session <subcommand>

Subcommands:
  session list [--client <id>] [--active]   sessions of the current box, newest first
  session close <id>                        closes a session: its token stops working at once

Options:
${outputHelp(44, 'lists')}
`;

type Ref = { id: string };

const SESSION_COLUMNS: Column<Resource>[] = [
  { header: 'ID', cell: (s) => s.id },
  { header: 'CLIENT', cell: (s) => (s.client as Ref).id },
  { header: 'USER', cell: (s) => (s.user as Ref | undefined)?.id },
  { header: 'TYPE', cell: (s) => s.type },
  { header: 'ACTIVE', cell: (s) => s.active },
  { header: 'START', cell: (s) => s.start },
];

export const sessionCommand: Command = {
  name: 'session',
  summary: 'list and close sessions',
  help: SESSION_HELP,
  async run(args, io) {
    const { values, positionals } = parse(args, {
      client: { type: 'string' },
      active: { type: 'boolean' },
      ...OUTPUT_OPTION,
      help: { type: 'boolean', short: 'h' },
    });
    const [sub, id] = positionals;
    if (values.help || !sub || sub === 'help') return io.out(SESSION_HELP);
    const format = outputFormat(values.output, io);
    switch (sub) {
      case 'list':
        return withBox(io, async (api) => {
          const query = new URLSearchParams({ _sort: '-start', _count: '1000' });
          if (values.client) query.set('client', values.client);
          if (values.active) query.set('active', 'true');
          const res = await api.call<{ entry: { resource: Resource }[] }>('GET', `/Session?${query}`);
          printList(
            io,
            format,
            res.body.entry.map((e) => e.resource),
            SESSION_COLUMNS,
          );
        });
      case 'close':
        if (!id) throw usage('usage: boxauth session close <id>');
        return withBox(io, async (api) => {
          await api.call('DELETE', `/Session/${encodeURIComponent(id)}`);
          io.out(`session/${id} closed\n`);
        });
      default:
        throw usage(`unknown subcommand "session ${sub}"; see boxauth session help`);
    }
  },
};
