// boxauth client …, policy …, app …, idp … and session …: the resource API from the shell, one
// noun per kind and kubectl's verbs (list, get, describe, create -f, apply -f, edit, delete).
import { errorMessage } from '../../errors.js';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { readYaml } from '../../yaml.js';
import { cliNamesOf, pluralOf, type ResourceKind as Kind } from '../../record-kinds.js';
import { hasOwnCredential } from '../../client-keys.js';
import { BoxRefusal, CliError, type BoxApi } from '../api.js';
import {
  allPages,
  asking,
  flag,
  OUTPUT,
  text,
  usage,
  withBox,
  type Command,
  type CommandSpec,
  type Given,
  type Io,
  type OptionSpec,
  type VerbSpec,
} from '../command.js';
import { editedRecord } from '../edit.js';
import { describeText } from '../describe.js';
import {
  changeFormat,
  outputFormat,
  printChange,
  printed,
  printList,
  printRecord,
  type ChangeFormat,
  type Column,
  type OutputFormat,
} from '../output.js';
import { policyTest, POLICY_TEST_NOTES, POLICY_TEST_OPTIONS, POLICY_TEST_VERB } from './policy-test.js';
import { BROWSER_COLUMNS, GRANT_COLUMNS, WHO, type GrantRecord, type SignInRecord } from './people-sessions.js';

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
    throw usage(
      `${file}: ${what} reads its secret from Secret ${ref.name}, which is not in this file: add it, or put the secret in the REST form`,
    );
  if (values[key] === undefined) throw usage(`${file}: Secret ${ref.name} has no key "${key}" (${what}'s secretRef.key)`);
  return values[key];
}

/**
 * A Kubernetes Client's spec as a REST body. The secret comes as the operator would get it: from the Secret
 * its secretRef names (which must be in the same file), or generated when the operator would generate one
 * (client_credentials, no auth.workload nor auth.spiffe, no keys of its own, generateSecret not false).
 */
function clientBody(spec: Record<string, unknown>, name: string, secrets: Secrets, file: string) {
  const { secretRef, generateSecret, ...body } = spec as Record<string, unknown> & { secretRef?: SecretRef; generateSecret?: boolean };
  if (secretRef) return { body: { ...body, secret: referencedSecret(secretRef, 'client-secret', secrets, file, `Client ${name}`) } };
  const grants = (body.grant_types as string[] | undefined) ?? [];
  const auth = body.auth as { workload?: unknown; spiffe?: unknown } | undefined;
  const workload = auth?.workload !== undefined || auth?.spiffe !== undefined;
  if (grants.includes('client_credentials') && !workload && !hasOwnCredential(body) && generateSecret !== false) {
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

/** A Kubernetes Webhook's spec as a REST body: its signing secret from the Secret its secretRef names. */
function webhookBody(spec: Record<string, unknown>, name: string, secrets: Secrets, file: string) {
  const { secretRef, ...body } = spec as Record<string, unknown> & { secretRef?: SecretRef };
  if (!secretRef) return { body };
  return { body: { ...body, secret: referencedSecret(secretRef, 'signing-secret', secrets, file, `Webhook ${name}`) } };
}

/** A Kubernetes Hook's spec as a REST body: its signing secret (if it has one) from the Secret its secretRef names. */
function hookBody(spec: Record<string, unknown>, name: string, secrets: Secrets, file: string) {
  if (spec.secretRef === undefined) return { body: spec };
  return webhookBody(spec, name, secrets, file);
}

const KUBE_BODIES: Partial<Record<Kind, typeof clientBody>> = {
  Client: clientBody,
  IdentityProvider: providerBody,
  Webhook: webhookBody,
  Hook: hookBody,
};

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
    throw usage(`${file}: ${errorMessage(err)}`);
  }
  const docs: KubeDocument[] = [];
  for (const value of values) {
    for (const item of Array.isArray(value) ? value : [value]) {
      if (item === null || item === undefined) continue;
      if (typeof item !== 'object') throw usage(`${file}: expected ${kind} objects`);
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
      if (!name) throw usage(`${file}: a ${kind} without metadata.name`);
      const spec = r.spec ?? {};
      const toBody = KUBE_BODIES[kind];
      out.items.push(toBody ? { id: name, ...toBody(spec, name, secrets, file) } : { id: name, body: spec });
    } else {
      if (r.resourceType !== undefined && r.resourceType !== kind) throw usage(`${file}: a ${String(r.resourceType)} is not a ${kind}`);
      if (typeof r.id !== 'string' || !r.id) throw usage(`${file}: every ${kind} needs an id`);
      out.items.push({ id: r.id, body: r });
    }
  }
  return out;
}

/** A file's text, or stdin's for "-". */
export function readInput(file: string): string {
  try {
    return fs.readFileSync(file === '-' ? 0 : file, 'utf8');
  } catch (err) {
    throw usage(`cannot read ${file}: ${errorMessage(err)}`);
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
  Webhook: [
    { header: 'ID', cell: (w) => w.id },
    { header: 'URL', cell: (w) => w.url },
    { header: 'EVENTS', cell: (w) => w.events },
    { header: 'DISABLED', cell: (w) => w.disabled ?? false },
    { header: 'MANAGED_BY', cell: (w) => (w.meta as { managedBy?: string } | undefined)?.managedBy },
  ],
  Hook: [
    { header: 'ID', cell: (h) => h.id },
    { header: 'MOMENTS', cell: (h) => h.moments },
    { header: 'AT', cell: (h) => h.url ?? (h.service as { name?: string } | undefined)?.name },
    { header: 'FAILURE', cell: (h) => h.failurePolicy ?? 'Fail' },
    { header: 'MANAGED_BY', cell: (h) => (h.meta as { managedBy?: string } | undefined)?.managedBy },
  ],
};

/** The options of the kinds' verbs. */
const FILE: OptionSpec = { type: 'string', short: 'f', usage: '-f, --filename <file>', summary: 'a YAML or JSON file ("-": stdin)' };

/** The verbs every kind of the resource API has. */
function kindVerbs(kind: Kind): Record<string, VerbSpec> {
  const a = /^[AEIOU]/.test(kind) ? 'an' : 'a';
  return {
    list: { summary: `the ${kind} resources of the current box`, options: ['output'] },
    get: { args: '<id>', count: [1, 1], summary: `one ${kind}`, options: ['output'] },
    describe: { args: '<id>', count: [1, 1], summary: `${a} ${kind} in words, with what is related to it` },
    create: {
      args: '-f <file>',
      summary: `create the ${pluralOf(kind)} in a file; one that exists already is refused (exit 1)`,
      options: ['filename', 'output'],
    },
    apply: {
      args: '-f <file>',
      summary:
        `create or replace the ${pluralOf(kind)} in a YAML or JSON file (several documents allowed; "-" reads stdin). ` +
        `Kubernetes manifests (kind: ${kind}) work too`,
      options: ['filename', 'output'],
    },
    edit: { args: '<id>', count: [1, 1], summary: `open ${a} ${kind} as YAML in $EDITOR, then put it back as saved`, options: ['output'] },
    delete: { args: '<id>', count: [1, 1], summary: `delete ${a} ${kind}`, options: ['output'] },
  };
}

/** The link line of a resource, with nothing a person chose left unescaped. */
const done = (noun: string, id: string, what: string): string => printed`${noun}/${id} ${what}\n`;

/**
 * The records of `kind` as written, one line each, or (-o) as written: one record, or a list of them.
 * The file is read before the box is asked: one missing or malformed is the user's input (exit 2), and no sign-in.
 */
async function writeAll(io: Io, given: Given, noun: string, kind: Kind, method: 'POST' | 'PUT'): Promise<void> {
  const file = text(given.values, 'filename');
  if (!file) throw usage(`usage: boxauth ${noun} ${given.verb} -f <file>`);
  const format = changeFormat(given.values);
  const { items, skipped } = readManifests(readInput(file), kind, file);
  for (const what of skipped) io.err(`skipped ${what}\n`);
  if (!items.length) throw usage(`${file}: no ${kind} in it`);
  return withBox(io, (api) => writeItems(api, io, noun, kind, method, format, items));
}

async function writeItems(
  api: BoxApi,
  io: Io,
  noun: string,
  kind: Kind,
  method: 'POST' | 'PUT',
  format: ChangeFormat,
  items: Manifests['items'],
): Promise<void> {
  const written: unknown[] = [];
  for (const m of items) {
    let res: { status: number; body: unknown; secretSent: boolean };
    let before: Resource | null | undefined;
    try {
      if (method === 'POST') res = { ...(await api.call('POST', `/${kind}`, { ...m.body, id: m.id })), secretSent: true };
      else {
        const path = `/${kind}/${encodeURIComponent(m.id)}`;
        before = await api.find<Resource>(path);
        res = await applied(api, path, m, before !== null);
      }
    } catch (err) {
      throw new CliError(`${noun}/${m.id}: ${errorMessage(err)}`);
    }
    written.push(res.body);
    if (format !== 'line') continue;
    const version = (r: unknown): unknown => (r as { meta?: { versionId?: unknown } } | null | undefined)?.meta?.versionId;
    const unchanged = before && res.status === 200 && version(before) === version(res.body);
    io.out(done(noun, m.id, res.status === 201 ? 'created' : unchanged ? 'unchanged' : 'configured'));
    // Shown once, as the operator would have written it into a Secret: the box keeps only its hash.
    if (m.generatedSecret && res.secretSent) io.out(`  generated secret (shown once, keep it): ${m.generatedSecret}\n`);
  }
  if (format !== 'line') printChange(io, format, written.length === 1 ? written[0] : written, '');
}

/**
 * PUT of one record of an apply. A secret the CLI generated (a Client manifest without secretRef) is
 * the record's first one only, as the operator generates one once: a record that may exist already is
 * sent without it, and keeps the secret it has — a manifest applied again changes nothing — unless
 * the box answers that it has none.
 */
async function applied(
  api: BoxApi,
  path: string,
  m: Manifests['items'][number],
  mayExist: boolean,
): Promise<{ status: number; body: unknown; secretSent: boolean }> {
  if (m.generatedSecret === undefined || !mayExist) return { ...(await api.call('PUT', path, m.body)), secretSent: true };
  const { secret: _generated, ...kept } = m.body;
  try {
    return { ...(await api.call('PUT', path, kept)), secretSent: false };
  } catch (err) {
    const missing = err instanceof BoxRefusal && err.status === 422 && (err.body as { errors?: object } | undefined)?.errors;
    if (!missing || !('secret' in missing)) throw err;
    return { ...(await api.call('PUT', path, m.body)), secretSent: true };
  }
}

/** What a kind adds to the verbs every kind has: more options and verbs, more help, and related records for describe. */
interface KindExtras {
  summary?: string;
  about?: string;
  notes?: string;
  options?: Record<string, OptionSpec>;
  verbs?: Record<string, VerbSpec>;
  /** Runs a verb of its own; false: not one of them. */
  run?(given: Given, io: Io): Promise<boolean>;
  /** What describe adds: sections about related records. */
  related?(api: BoxApi, record: Resource): Promise<[string, string][]>;
}

/** The resource's own fields, without the bookkeeping the box adds (meta) and resourceType. */
function ownFields(record: Resource): Record<string, unknown> {
  const { meta: _meta, resourceType: _type, ...fields } = record;
  return fields;
}

function resourceCommand(kind: Kind, extras: KindExtras = {}): Command {
  const { name, aliases } = cliNamesOf(kind);
  const spec: CommandSpec = {
    name,
    aliases,
    summary: extras.summary ?? `${kind} resources: list, get, describe, create, apply, edit, delete`,
    ...(extras.about ? { about: extras.about } : {}),
    options: { filename: FILE, ...extras.options, output: OUTPUT },
    verbs: { ...kindVerbs(kind), ...extras.verbs },
    ...(extras.notes ? { notes: extras.notes } : {}),
  };
  const path = (id: string): string => `/${kind}/${encodeURIComponent(id)}`;
  return {
    spec,
    async run(given, io) {
      if (extras.run && (await extras.run(given, io))) return;
      const [id = ''] = given.args;
      switch (given.verb) {
        case 'list': {
          const format = outputFormat(given.values, io);
          return withBox(io, async (api) => {
            const res = await api.call<{ entry: { resource: Resource }[] }>('GET', `/${kind}?_count=1000`);
            printList(
              io,
              format,
              res.body.entry.map((e) => e.resource),
              COLUMNS[kind],
            );
          });
        }
        case 'get': {
          const format = outputFormat(given.values, io);
          return withBox(io, async (api) => printRecord(io, format, (await api.call<Resource>('GET', path(id))).body, COLUMNS[kind]));
        }
        case 'describe':
          return withBox(io, async (api) => {
            const record = (await api.call<Resource>('GET', path(id))).body;
            const meta = record.meta as { lastUpdated?: string; managedBy?: string } | undefined;
            const related = extras.related ? await extras.related(api, record) : [];
            io.out(
              describeText(`${kind} ${id}`, ownFields(record), [
                ...related,
                ...(meta?.managedBy ? [['Managed by', meta.managedBy] as [string, string]] : []),
                ...(meta?.lastUpdated ? [['Last updated', meta.lastUpdated] as [string, string]] : []),
              ]),
            );
          });
        case 'create':
        case 'apply':
          return writeAll(io, given, name, kind, given.verb === 'create' ? 'POST' : 'PUT');
        case 'edit': {
          const format = changeFormat(given.values);
          return withBox(io, async (api) => {
            const record = (await api.call<Resource>('GET', path(id))).body;
            const edited = editedRecord(io, ownFields(record), `${name}-${id}`);
            if (edited === undefined) return io.out(done(name, id, 'unchanged (nothing edited)'));
            const res = await api.call<Resource>('PUT', path(id), edited);
            printChange(io, format, res.body, done(name, id, 'edited'));
          });
        }
        case 'delete': {
          const format = changeFormat(given.values);
          return withBox(io, async (api) => {
            const res = await api.call('DELETE', path(id));
            printChange(io, format, res.body, done(name, id, 'deleted'));
          });
        }
        default:
          throw usage(`unknown subcommand "${name} ${given.verb}"; see boxauth ${name} help`);
      }
    },
  };
}

/** A policy's or an app's id in a sentence-list of ids, or "none". */
const idList = (records: Resource[]): string => (records.length ? records.map((r) => r.id).join(', ') : 'none');

async function allOf(api: BoxApi, kind: Kind | 'Session', query = ''): Promise<Resource[]> {
  return (await api.call<{ entry: { resource: Resource }[] }>('GET', `/${kind}?_count=1000${query}`)).body.entry.map((e) => e.resource);
}

export const clientCommand = resourceCommand('Client', {
  async related(api, client) {
    const sessions = await allOf(api, 'Session', `&active=true&client=${encodeURIComponent(client.id)}`);
    return [['Active sessions', String(sessions.length)]];
  },
});

export const policyCommand = resourceCommand('AccessPolicy', {
  options: POLICY_TEST_OPTIONS,
  verbs: { test: POLICY_TEST_VERB },
  notes: POLICY_TEST_NOTES,
  async run(given, io) {
    if (given.verb !== 'test') return false;
    await policyTest(given, io);
    return true;
  },
});

export const appCommand = resourceCommand('App', {
  async related(api, app) {
    const policies = (await allOf(api, 'AccessPolicy')).filter((p) => p.app === app.id);
    return [['Policies', idList(policies)]];
  },
});

/** The secret to give a provider: stdin as a whole, or typed without echo; never an argument (shell history, ps). */
async function providerSecretInput(io: Io, fromStdin: boolean): Promise<string> {
  const secret = fromStdin
    ? (await asking(io, (p) => p.readAll())).replace(/\r?\n$/, '')
    : await asking(io, (p) => p.askHidden('Client secret or bind password: '));
  if (!secret) throw usage(fromStdin ? '--secret-stdin read no secret; nothing changed' : 'no secret typed; nothing changed');
  return secret;
}

export const idpCommand = resourceCommand('IdentityProvider', {
  summary: 'identity providers (where people sign in with an account they have)',
  options: { 'secret-stdin': { type: 'boolean', summary: 'read the secret from stdin (a pipe or a file)' } },
  verbs: {
    'set-secret': {
      args: '<id>',
      count: [1, 1],
      summary:
        'give the provider a new client secret (oidc, oauth2, github) or bind password (ldap): typed without echo, or --secret-stdin',
      options: ['secret-stdin', 'output'],
    },
    check: {
      args: '<id>',
      count: [1, 1],
      summary: 'try the provider without signing anyone in (discovery, issuer, keys, client secret; LDAP bind, bases)',
      options: ['output'],
    },
  },
  notes: `An IdentityProvider is somewhere people already have an account: an OpenID Connect provider
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
  boxauth idp check corp-sso                            # exit 1 when a check fails
`,
  async run(given, io) {
    if (given.verb === 'check') {
      await checkProvider(given.args[0] ?? '', outputFormat(given.values, io), io);
      return true;
    }
    if (given.verb !== 'set-secret') return false;
    const [id = ''] = given.args;
    const format = changeFormat(given.values);
    const secret = await providerSecretInput(io, flag(given.values, 'secret-stdin'));
    await withBox(io, async (api) => {
      const path = `/IdentityProvider/${encodeURIComponent(id)}`;
      const { meta: _meta, ...provider } = (await api.call<Resource>('GET', path)).body;
      const res = await api.call('PUT', path, { ...provider, secret });
      printChange(io, format, res.body, done('idp', id, 'secret set'));
    });
    return true;
  },
});

export const webhookCommand = resourceCommand('Webhook', {
  summary: 'Webhooks (where the box POSTs its events, signed)',
  notes: `A Webhook names a URL, the CloudEvents types it wants (io.boxauth.session.closed,
io.boxauth.account.deactivated, ...) and a signing secret: "whsec_" and the base64 of 24 to 64
random bytes, as the Standard Webhooks libraries take it. Only a writer the box lets do
everything may write one.

Its secret is write-only: get and list never show it, and it is never an argument. Give it in
the file (REST form: "secret"; Kubernetes form: the Secret its secretRef names, in the same
file, key signing-secret). Applying a Webhook without one keeps the secret it has.

Examples:
  boxauth webhook apply -f examples/webhook.yaml
  boxauth webhook list -o table
`,
});

export const hookCommand = resourceCommand('Hook', {
  summary: 'Hooks (your own code, asked at sign-in and at every token)',
  notes: `A Hook names your code (a Service of the cluster, or a URL), when the box asks it (at
sign-in, before a token, ...), the conditions it is asked under, a timeout and what a failure
means, as a Kubernetes webhook does. Each request is signed with a Standard Webhooks secret
("whsec_" and the base64 of 24 to 64 random bytes) and/or carries a token of the box. Only a
writer the box lets do everything may write one.

Its secret is write-only: get and list never show it. Give it in the file (REST form:
"secret"; Kubernetes form: the Secret its secretRef names, key signing-secret). Applying a Hook
without one keeps the secret it has.

Examples:
  boxauth hook apply -f hook.yaml
  boxauth hook list -o table
`,
});

interface ProviderCheck {
  check: string;
  ok: boolean;
  detail: string;
}

/**
 * `idp check`: what POST /IdentityProvider/<id>/$check found, one row per check. A failed check is
 * exit 1, so a script (or a GitOps job) can try a provider before people do.
 */
async function checkProvider(id: string, format: OutputFormat, io: Io): Promise<void> {
  const found = await withBox(io, async (api) => {
    const res = await api.call<{ ok: boolean; checks: ProviderCheck[] }>('POST', `/IdentityProvider/${encodeURIComponent(id)}/$check`);
    printList(io, format, res.body.checks, [
      { header: 'CHECK', cell: (c) => c.check },
      { header: 'OK', cell: (c) => c.ok },
      { header: 'DETAIL', cell: (c) => c.detail },
    ]);
    return res.body;
  });
  if (!found.ok)
    throw new CliError(
      `${id}: a check failed (${found.checks
        .filter((c) => !c.ok)
        .map((c) => c.check)
        .join(', ')})`,
    );
}

type Ref = { id: string };

const SESSION_COLUMNS: Column<Resource>[] = [
  { header: 'ID', cell: (s) => s.id },
  { header: 'CLIENT', cell: (s) => (s.client as Ref).id },
  { header: 'USER', cell: (s) => (s.user as Ref | undefined)?.id },
  { header: 'TYPE', cell: (s) => s.type },
  { header: 'ACTIVE', cell: (s) => s.active },
  { header: 'START', cell: (s) => s.start },
];

const SESSION_SPEC: CommandSpec = {
  name: 'session',
  aliases: ['sessions'],
  summary: "sessions: every Session record, or people's live grants and signed-in browsers",
  about: `A Session is what a token was issued in: a client's own (client_credentials), or a person's
grant to an app. Sessions are made by signing in, so there is no create, apply or edit.`,
  options: {
    client: { type: 'string', usage: '--client <id>', summary: 'only sessions (or grants) of this client' },
    active: { type: 'boolean', summary: 'only sessions not closed or expired' },
    grants: {
      type: 'boolean',
      summary: "people's live grants to apps instead: who, which client, since when, last used, factors, from where",
    },
    browsers: { type: 'boolean', summary: "people's signed-in browsers instead (--client does not apply)" },
    filter: {
      type: 'string',
      usage: '--filter <text>',
      summary: 'with --grants or --browsers: only people whose email holds this (any case)',
    },
    output: OUTPUT,
  },
  verbs: {
    list: {
      args: '[--grants | --browsers]',
      summary: 'the sessions of the current box, newest first',
      options: ['client', 'active', 'grants', 'browsers', 'filter', 'output'],
    },
    get: { args: '<id>', count: [1, 1], summary: 'one session', options: ['output'] },
    describe: { args: '<id>', count: [1, 1], summary: 'a session in words' },
    delete: {
      args: '<id>',
      count: [1, 1],
      aliases: ['close'],
      summary: "close a session: its token stops working at once (a person's grant: boxauth user end-sessions)",
      options: ['output'],
    },
  },
};

/** boxauth session list: the Session records, or (--grants, --browsers) people's grants and signed-in browsers. */
async function listSessions(given: Given, io: Io): Promise<void> {
  const format = outputFormat(given.values, io);
  const client = text(given.values, 'client');
  const filter = text(given.values, 'filter');
  const grants = flag(given.values, 'grants');
  const browsers = flag(given.values, 'browsers');
  if (grants && browsers) throw usage('give --grants or --browsers, not both');
  if (browsers && client !== undefined) throw usage('--client lists grants; signed-in browsers belong to no client');
  if (!grants && !browsers && filter !== undefined) throw usage("--filter goes with --grants or --browsers (people's sessions)");
  if ((grants || browsers) && flag(given.values, 'active'))
    throw usage('--active goes with the Session records: grants and browsers listed are live');
  await withBox(io, async (api) => {
    if (grants || browsers) {
      const query = new URLSearchParams();
      if (filter) query.set('q', filter);
      if (client !== undefined) query.set('client', client);
      const path = `${browsers ? '/sign-ins' : '/grants'}${query.size ? `?${query}` : ''}`;
      if (browsers) return printList(io, format, await allPages<SignInRecord>(api, path), [WHO, ...BROWSER_COLUMNS]);
      return printList(io, format, await allPages<GrantRecord>(api, path), [WHO, ...GRANT_COLUMNS]);
    }
    const query = new URLSearchParams({ _sort: '-start', _count: '1000' });
    if (client) query.set('client', client);
    if (flag(given.values, 'active')) query.set('active', 'true');
    const res = await api.call<{ entry: { resource: Resource }[] }>('GET', `/Session?${query}`);
    printList(
      io,
      format,
      res.body.entry.map((e) => e.resource),
      SESSION_COLUMNS,
    );
  });
}

export const sessionCommand: Command = {
  spec: SESSION_SPEC,
  async run(given, io) {
    const [id = ''] = given.args;
    const path = `/Session/${encodeURIComponent(id)}`;
    switch (given.verb) {
      case 'list':
        return listSessions(given, io);
      case 'get': {
        const format = outputFormat(given.values, io);
        return withBox(io, async (api) => printRecord(io, format, (await api.call<Resource>('GET', path)).body, SESSION_COLUMNS));
      }
      case 'describe':
        return withBox(io, async (api) =>
          io.out(describeText(`Session ${id}`, ownFields((await api.call<Resource>('GET', path)).body), [])),
        );
      case 'delete': {
        const format = changeFormat(given.values);
        return withBox(io, async (api) => {
          const res = await api.call('DELETE', path);
          printChange(io, format, res.body, done('session', id, 'closed'));
        });
      }
      default:
        throw usage(`unknown subcommand "session ${given.verb}"; see boxauth session help`);
    }
  },
};
