// Where `boxauth policy test` takes the policies it decides cases by: a box's AccessPolicies,
// read with the CLI's credentials, or a directory of manifests as kubectl or a GitOps tool
// would apply them, read as the box and the operator read them. A manifest is a Kubernetes
// resource (kind, metadata.name, spec: the record is {resourceType: kind, id: metadata.name,
// ...spec}, as operator/controllers/records.ts makes it) or a REST record (resourceType, id);
// each AccessPolicy and App is checked as a write of it would be (its schema, and whether the
// policy compiles: api/policy/engines.ts checkPolicyCompiles), so a manifest the box or the
// operator would refuse is refused here (exit 2), naming its file, line and column.
import fs from 'node:fs';
import path from 'node:path';
import { errorMessage, ValidationError } from '../errors.js';
import { checkPolicyCompiles } from '../policy/engines.js';
import { validateResource } from '../schema/resources.js';
import type { AccessPolicy, App } from '../types.js';
import { readYaml } from '../yaml.js';
import type { ResourceKind } from '../record-kinds.js';
import { CliError, type BoxApi } from './api.js';
import { yamlLocator } from './policy-cases.js';

type Json = Record<string, unknown>;

/** The records cases are decided by: the policies, and the Apps and Clients the request objects name. */
export interface PolicySources {
  /** Where they come from, for the summary. */
  from: string;
  policies: AccessPolicy[];
  apps: Map<string, App>;
  /** Client records as the box's API request object holds them (never a secret). */
  clients: Map<string, Json>;
}

/** The kinds of the resource API that cases are decided by. */
const KINDS = ['AccessPolicy', 'App', 'Client'] as const satisfies readonly ResourceKind[];
type Kind = (typeof KINDS)[number];

/** What a Client manifest holds of its secret: never part of the record policies see. */
const SECRET_FIELDS = ['secret', 'secretRef', 'generateSecret'];

/** The files of a directory and its subdirectories that hold manifests, in a stable order. */
function manifestFiles(dir: string): string[] {
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch (err) {
    throw new CliError(`cannot read the manifests in ${dir}: ${errorMessage(err)}`, 2);
  }
  return entries
    .sort((a, b) => a.name.localeCompare(b.name))
    .flatMap((e) => {
      const full = path.join(dir, e.name);
      if (e.isDirectory()) return e.name.startsWith('.') ? [] : manifestFiles(full);
      return /\.(ya?ml|json)$/i.test(e.name) ? [full] : [];
    });
}

/** One document of a manifest file as a record of a kind the cases need, or why it is left. */
function recordOf(doc: Json): { kind: Kind; record: Json } | { skipped: string } {
  if (doc.apiVersion !== undefined || doc.kind !== undefined) {
    const kind = doc.kind;
    const metadata = (doc.metadata ?? {}) as { name?: unknown };
    if (!KINDS.includes(kind as Kind)) return { skipped: `${String(kind)} ${String(metadata.name ?? '')}`.trim() };
    if (typeof metadata.name !== 'string' || !metadata.name) throw new Error(`a ${String(kind)} without metadata.name`);
    const spec = doc.spec ?? {};
    if (typeof spec !== 'object' || Array.isArray(spec)) throw new Error(`the spec of ${String(kind)} ${metadata.name} is not a mapping`);
    return { kind: kind as Kind, record: { resourceType: kind, id: metadata.name, ...spec } };
  }
  const kind = doc.resourceType;
  if (kind === undefined) return { skipped: 'a document with neither kind nor resourceType' };
  if (!KINDS.includes(kind as Kind)) return { skipped: `${String(kind)} ${String(doc.id ?? '')}`.trim() };
  if (typeof doc.id !== 'string' || !doc.id) throw new Error(`every ${String(kind)} needs an id`);
  return { kind: kind as Kind, record: doc };
}

/** Checks a record as a write of it would be checked (a Client without what it says of its secret); throws an Error naming the field. */
function check(kind: Kind, record: Json): void {
  validateResource(kind, kind === 'Client' ? clientRecord(record) : record);
  if (kind === 'AccessPolicy') checkPolicyCompiles(record as unknown as AccessPolicy);
}

/** The first field a ValidationError names, as a path into the document. */
function fieldPath(err: unknown, crd: boolean): (string | number)[] {
  const field = err instanceof ValidationError ? Object.keys(err.errors)[0] : undefined;
  const parts = field ? field.split(/[./]/).map((p) => (/^\d+$/.test(p) ? Number(p) : p)) : [];
  return crd && parts.length ? ['spec', ...parts] : parts;
}

/** The AccessPolicies, Apps and Clients of a directory's manifests; exit 2 for one the box would refuse. */
export function readManifestDir(dir: string, skipped: (what: string) => void): PolicySources {
  const sources: PolicySources = { from: dir, policies: [], apps: new Map(), clients: new Map() };
  const seen = new Map<string, string>();
  for (const file of manifestFiles(dir)) {
    let text: string;
    let docs: unknown[];
    try {
      text = fs.readFileSync(file, 'utf8');
      docs = readYaml(text);
    } catch (err) {
      throw new CliError(`${file}: ${errorMessage(err)}`, 2);
    }
    const where = yamlLocator(text);
    docs.forEach((value, index) => {
      const items = Array.isArray(value) ? value : [value];
      items.forEach((doc: unknown, item) => {
        if (doc === null || doc === undefined) return;
        const at = (p: (string | number)[]) => `${file}:${where(index, [...(Array.isArray(value) ? [item] : []), ...p])}`;
        if (typeof doc !== 'object' || Array.isArray(doc)) throw new CliError(`${at([])}: not a manifest (a mapping)`, 2);
        const d = doc as Json;
        const crd = d.kind !== undefined || d.apiVersion !== undefined;
        const named = crd
          ? `${String(d.kind)} ${String((d.metadata as Json | undefined)?.name ?? '')}`
          : `${String(d.resourceType)} ${String(d.id ?? '')}`;
        let found;
        try {
          found = recordOf(doc as Json);
          if ('skipped' in found) return skipped(`${file}: ${found.skipped}`);
          check(found.kind, found.record);
        } catch (err) {
          throw new CliError(`${at(fieldPath(err, crd))}: ${named.trim()}: ${errorMessage(err)}`, 2);
        }
        const { kind, record } = found;
        const key = `${kind}/${String(record.id)}`;
        const before = seen.get(key);
        if (before) throw new CliError(`${at([])}: ${key} again (first at ${before}): the box holds one record of an id`, 2);
        seen.set(key, at([]));
        if (kind === 'AccessPolicy') sources.policies.push(record as unknown as AccessPolicy);
        if (kind === 'App') sources.apps.set(String(record.id), record as unknown as App);
        if (kind === 'Client') sources.clients.set(String(record.id), clientRecord(record));
      });
    });
  }
  return sources;
}

/** A Client as the request object holds it: without its secret, nor the box's bookkeeping (meta). */
function clientRecord(record: Json): Json {
  return Object.fromEntries(Object.entries(record).filter(([k]) => !SECRET_FIELDS.includes(k) && k !== 'meta'));
}

/** Every record of a kind the box holds, page by page (its lists answer a Bundle, at most 1000 an answer). */
async function everyRecord(api: BoxApi, kind: Kind): Promise<Json[]> {
  const records: Json[] = [];
  for (let page = 1; ; page++) {
    const { body } = await api.call<{ total: number; entry: { resource: Json }[] }>('GET', `/${kind}?_count=1000&_page=${page}`);
    records.push(...body.entry.map((e) => e.resource));
    if (records.length >= body.total || !body.entry.length) return records;
  }
}

/**
 * The box's AccessPolicies as it holds them (and its Apps and Clients, when `needs` says the cases
 * name them), read through its API with the CLI's credentials: a caller learns nothing here that
 * `boxauth policy list` would not show it.
 */
export async function readBox(api: BoxApi, needs: { apps: boolean; clients: boolean }): Promise<PolicySources> {
  const read = async (kind: Kind): Promise<Json[]> => {
    try {
      return await everyRecord(api, kind);
    } catch (err) {
      throw new CliError(`cannot read the box's ${kind} records: ${errorMessage(err)}`, err instanceof CliError ? err.exitCode : 1);
    }
  };
  const policies = (await read('AccessPolicy')) as unknown as AccessPolicy[];
  const apps = needs.apps ? await read('App') : [];
  const clients = needs.clients ? await read('Client') : [];
  return {
    from: api.target.url,
    policies,
    apps: new Map(apps.map((a) => [String(a.id), a as unknown as App])),
    clients: new Map(clients.map((c) => [String(c.id), clientRecord(c)])),
  };
}
