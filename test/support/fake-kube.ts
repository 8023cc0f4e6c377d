// An API server in memory for the operator's unit tests: the Kube interface
// (operator/kube.ts) over a map of objects, with what the controllers count on
// from a real one: uids, resourceVersions that move only when something
// changed, generations that move with the spec, 404 and 409 answers, merge and
// JSON patches, the status subresource, Secrets' stringData, finalizers that
// hold a deleted object until they are gone. cache(type) is what an informer
// gives the controllers, its handlers told of every change at once.
//
// Not modelled: garbage collection through ownerReferences, admission and
// schema validation, field managers (apply merges what it is sent).
import { kubeTime, type Clock } from '../../operator/clock.js';
import type { Handler, ObjectCache } from '../../operator/informer.js';
import { apiVersionOf, EVENTS, KubeError, PATCH, type KObject, type Kube, type ResourceType } from '../../operator/kube.js';
import { ManualClock } from './clock.js';

/** Types whose status only the status subresource writes (CRDs with `subresources.status`, Deployments). */
const STATUS_SUBRESOURCE = new Set(['boxes', 'clients', 'accesspolicies', 'deployments']);

export interface KubeRequest {
  verb: 'get' | 'create' | 'replace' | 'patch' | 'delete' | 'apply';
  type: ResourceType;
  namespace: string | undefined;
  name: string;
  subresource?: string;
}

type JsonObject = Record<string, unknown>;

const isObject = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);
const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);
const typeKey = (type: ResourceType): string => `${type.group}/${type.plural}`;
const objectKey = (type: ResourceType, namespace: string | undefined, name: string): string =>
  `${typeKey(type)}|${namespace ?? ''}|${name}`;

/** RFC 7386: objects merge, null removes, anything else replaces. */
function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return structuredClone(patch);
  const result: JsonObject = isObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else result[key] = mergePatch(result[key], value);
  }
  return result;
}

/** RFC 6902, the operations the operator sends (test, add, replace, remove). */
function jsonPatch(target: KObject, ops: { op: string; path: string; value?: unknown }[]): KObject {
  const doc = structuredClone(target) as JsonObject;
  for (const { op, path, value } of ops) {
    const keys = path
      .split('/')
      .slice(1)
      .map((k) => k.replaceAll('~1', '/').replaceAll('~0', '~'));
    const last = keys.pop()!;
    let parent: JsonObject = doc;
    for (const key of keys) parent = (parent[key] ??= {}) as JsonObject;
    if (op === 'test' && !same(parent[last], value)) {
      throw new KubeError(422, 'Invalid', `the server rejected our request: test of ${path} failed`);
    }
    if (op === 'add' || op === 'replace') parent[last] = structuredClone(value);
    if (op === 'remove') delete parent[last];
  }
  return doc as KObject;
}

export class FakeKube implements Kube {
  /** Every request, in order: what a test asserts was, or was not, asked. */
  readonly requests: KubeRequest[] = [];
  private readonly store = new Map<string, KObject>();
  private readonly handlers = new Map<string, Handler<KObject>[]>();
  private failures: { when: (r: KubeRequest) => boolean; error: Error }[] = [];
  private version = 0;
  private uids = 0;

  constructor(readonly clock: Clock = new ManualClock()) {}

  /** Requests `when` matches fail with `error` until the answer is called. */
  failWhen(
    when: (r: KubeRequest) => boolean,
    error: Error = new KubeError(500, 'InternalError', 'failure injected by the test'),
  ): () => void {
    const failure = { when, error };
    this.failures.push(failure);
    return () => {
      this.failures = this.failures.filter((f) => f !== failure);
    };
  }

  /** Stores the object as given (status, deletionTimestamp and all), as if it were there already; handlers hear of it. */
  put<T extends KObject>(type: ResourceType, obj: T): T {
    const old = this.store.get(objectKey(type, obj.metadata.namespace, obj.metadata.name));
    const filled = structuredClone(obj) as KObject;
    filled.apiVersion ??= apiVersionOf(type);
    filled.kind ??= type.kind;
    filled.metadata.uid ??= old?.metadata.uid ?? this.newUid();
    filled.metadata.creationTimestamp ??= kubeTime(new Date(this.clock.now()));
    if (STATUS_SUBRESOURCE.has(type.plural)) filled.metadata.generation ??= old?.metadata.generation ?? 1;
    return this.save(type, filled, old, { force: true }) as T;
  }

  /** A copy of the stored object, or undefined. */
  object<T extends KObject = KObject>(type: ResourceType, namespace: string | undefined, name: string): T | undefined {
    const obj = this.store.get(objectKey(type, namespace, name));
    return obj && (structuredClone(obj) as T);
  }

  /** Copies of the stored objects of a type (of one namespace, when given). */
  objects<T extends KObject = KObject>(type: ResourceType, namespace?: string): T[] {
    return [...this.store.entries()]
      .filter(([key, obj]) => key.startsWith(`${typeKey(type)}|`) && (namespace === undefined || obj.metadata.namespace === namespace))
      .map(([, obj]) => structuredClone(obj) as T);
  }

  /** "Type reason" of each Event about the object, oldest first. */
  eventsAbout(namespace: string, name: string): string[] {
    return this.objects<KObject & { involvedObject: { name: string }; type: string; reason: string }>(EVENTS, namespace)
      .filter((e) => e.involvedObject.name === name)
      .map((e) => `${e.type} ${e.reason}`);
  }

  /** An informer's view of one type: its objects, and a word to its handlers on every change. */
  cache<T extends KObject>(type: ResourceType): ObjectCache<T> {
    return {
      on: (handler) => {
        const list = this.handlers.get(typeKey(type)) ?? [];
        list.push(handler as Handler<KObject>);
        this.handlers.set(typeKey(type), list);
      },
      get: (namespace, name) => this.object<T>(type, namespace, name),
      list: (namespace) => this.objects<T>(type, namespace),
    };
  }

  async get<T = KObject>(type: ResourceType, namespace: string | undefined, name: string): Promise<T> {
    this.ask({ verb: 'get', type, namespace, name });
    return this.existing(type, namespace, name) as T;
  }

  async find<T = KObject>(type: ResourceType, namespace: string | undefined, name: string): Promise<T | undefined> {
    try {
      return await this.get<T>(type, namespace, name);
    } catch (err) {
      if (err instanceof KubeError && err.status === 404) return undefined;
      throw err;
    }
  }

  async create<T = KObject>(type: ResourceType, namespace: string | undefined, body: unknown): Promise<T> {
    const obj = structuredClone(body) as KObject;
    this.ask({ verb: 'create', type, namespace, name: obj.metadata.name });
    if (this.store.has(objectKey(type, namespace, obj.metadata.name))) {
      throw new KubeError(409, 'AlreadyExists', `${type.plural} "${obj.metadata.name}" already exists`);
    }
    return this.createObject(type, namespace, obj) as T;
  }

  async replace<T = KObject>(type: ResourceType, namespace: string | undefined, name: string, body: unknown): Promise<T> {
    this.ask({ verb: 'replace', type, namespace, name });
    const old = this.existing(type, namespace, name);
    const next = structuredClone(body) as KObject;
    if (next.metadata.resourceVersion && next.metadata.resourceVersion !== old.metadata.resourceVersion) {
      throw new KubeError(409, 'Conflict', `Operation cannot be fulfilled on ${type.plural} "${name}": the object has been modified`);
    }
    return this.save(type, this.keepServerFields(type, old, next), old) as T;
  }

  async patch<T = KObject>(
    type: ResourceType,
    namespace: string | undefined,
    name: string,
    body: unknown,
    contentType: string = PATCH.merge,
    subresource?: string,
  ): Promise<T> {
    this.ask({ verb: 'patch', type, namespace, name, ...(subresource ? { subresource } : {}) });
    const old = this.existing(type, namespace, name);
    const patched =
      contentType === PATCH.json
        ? jsonPatch(old, body as { op: string; path: string; value?: unknown }[])
        : (mergePatch(old, body) as KObject);
    if (subresource === 'status') return this.save(type, { ...structuredClone(old), status: patched.status }, old) as T;
    return this.save(type, this.keepServerFields(type, old, patched), old) as T;
  }

  async delete(type: ResourceType, namespace: string | undefined, name: string): Promise<boolean> {
    this.ask({ verb: 'delete', type, namespace, name });
    const old = this.store.get(objectKey(type, namespace, name));
    if (!old) return false;
    if (old.metadata.finalizers?.length) {
      if (!old.metadata.deletionTimestamp) {
        const next = structuredClone(old);
        next.metadata.deletionTimestamp = kubeTime(new Date(this.clock.now()));
        this.save(type, next, old);
      }
      return true;
    }
    this.remove(type, old);
    return true;
  }

  async apply<T = KObject>(type: ResourceType, namespace: string | undefined, object: KObject): Promise<T> {
    this.ask({ verb: 'apply', type, namespace, name: object.metadata.name });
    const old = this.store.get(objectKey(type, namespace, object.metadata.name));
    if (!old) return this.createObject(type, namespace, structuredClone(object)) as T;
    return this.save(type, this.keepServerFields(type, old, mergePatch(old, object) as KObject), old) as T;
  }

  private ask(request: KubeRequest): void {
    this.requests.push(request);
    const failure = this.failures.find((f) => f.when(request));
    if (failure) throw failure.error;
  }

  private existing(type: ResourceType, namespace: string | undefined, name: string): KObject {
    const obj = this.store.get(objectKey(type, namespace, name));
    if (!obj) throw new KubeError(404, 'NotFound', `${type.plural} "${name}" not found`);
    return structuredClone(obj);
  }

  private newUid(): string {
    return `uid-${++this.uids}`;
  }

  private createObject(type: ResourceType, namespace: string | undefined, obj: KObject): KObject {
    obj.apiVersion = apiVersionOf(type);
    obj.kind = type.kind;
    obj.metadata = {
      ...obj.metadata,
      ...(namespace ? { namespace } : {}),
      uid: this.newUid(),
      creationTimestamp: kubeTime(new Date(this.clock.now())),
      ...(STATUS_SUBRESOURCE.has(type.plural) ? { generation: 1 } : {}),
    };
    if (STATUS_SUBRESOURCE.has(type.plural)) delete obj.status;
    return this.save(type, obj, undefined);
  }

  /** What a write of the object itself cannot change: identity, and the status where a subresource owns it. */
  private keepServerFields(type: ResourceType, old: KObject, next: KObject): KObject {
    const { uid, creationTimestamp, namespace, name, generation, deletionTimestamp } = old.metadata;
    next.metadata = { ...next.metadata, uid, creationTimestamp, namespace, name, generation, deletionTimestamp };
    if (!next.metadata.namespace) delete next.metadata.namespace;
    if (!next.metadata.deletionTimestamp) delete next.metadata.deletionTimestamp;
    if (next.metadata.generation === undefined) delete next.metadata.generation;
    if (STATUS_SUBRESOURCE.has(type.plural)) {
      if (old.status === undefined) delete next.status;
      else next.status = structuredClone(old.status);
    }
    return next;
  }

  /** Stores `next` when it differs from `old` (or `force`), moving resourceVersion and generation as an API server does. */
  private save(type: ResourceType, next: KObject, old: KObject | undefined, { force = false } = {}): KObject {
    if (type.kind === 'Secret' && isObject(next.stringData)) {
      const encoded = Object.entries(next.stringData).map(([k, v]) => [k, Buffer.from(String(v), 'utf8').toString('base64')]);
      next.data = { ...(next.data as JsonObject | undefined), ...Object.fromEntries(encoded) };
      delete next.stringData;
    }
    if (old && !force) {
      const withoutVersion = (o: KObject): unknown => ({ ...o, metadata: { ...o.metadata, resourceVersion: undefined } });
      if (same(withoutVersion(old), withoutVersion(next))) return structuredClone(old);
      if (next.metadata.generation !== undefined && !same(old.spec, next.spec)) next.metadata.generation += 1;
    }
    if (next.metadata.deletionTimestamp && !next.metadata.finalizers?.length) {
      if (old) this.remove(type, old);
      return structuredClone(next);
    }
    next.metadata.resourceVersion = String(++this.version);
    this.store.set(objectKey(type, next.metadata.namespace, next.metadata.name), next);
    this.emit(type, old ? 'update' : 'add', next, old);
    return structuredClone(next);
  }

  private remove(type: ResourceType, old: KObject): void {
    this.store.delete(objectKey(type, old.metadata.namespace, old.metadata.name));
    this.emit(type, 'delete', old, old);
  }

  private emit(type: ResourceType, event: 'add' | 'update' | 'delete', obj: KObject, old: KObject | undefined): void {
    for (const handler of this.handlers.get(typeKey(type)) ?? []) handler(event, structuredClone(obj), old && structuredClone(old));
  }
}
