// What every controller does alike. The skip rule: work happens when the
// generation, a dependency or a forced resync asks for it, and not for events
// that change nothing the reconcile depends on. The conditions kstatus reads
// (Reconciling, Stalled) next to Ready, for every kind, on an API server in
// memory.
import { expect } from 'chai';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import type { Logger } from '../../../api/log.js';
import { Controller, type Outcome, type Resource } from '../../../operator/controller.js';
import type { EventRecorder } from '../../../operator/events.js';
import type { ObjectCache } from '../../../operator/informer.js';
import type { AccessPolicyResource } from '../../../operator/controllers/accesspolicy.js';
import type { BoxResource } from '../../../operator/controllers/box.js';
import type { ClientResource } from '../../../operator/controllers/client.js';
import { ACCESS_POLICIES, BOXES, CLIENTS, SECRETS, type Kube } from '../../../operator/kube.js';
import { OperatorMetrics } from '../../../operator/metrics.js';
import { ManualClock, settle } from '../../support/clock.js';
import { OperatorHarness, recordsDatabase } from '../../support/operator.js';

class Counting extends Controller<Resource> {
  dependency = 'v1';
  calls: boolean[] = [];
  ready = true;
  failure: Error | undefined;

  protected fingerprint(): string {
    return this.dependency;
  }

  protected async reconcile(_obj: Resource, force: boolean): Promise<Outcome> {
    this.calls.push(force);
    if (this.failure) throw this.failure;
    return { ready: this.ready };
  }
}

describe('operator controller skip rule', function () {
  let obj: Resource;
  let controller: Counting;
  let metrics: OperatorMetrics;
  let lines: any[];

  beforeEach(function () {
    obj = { metadata: { name: 'c', namespace: 'ns', generation: 1 }, status: { observedGeneration: 1 } };
    const informer: ObjectCache<Resource> = { on: () => undefined, get: () => obj, list: () => [obj] };
    metrics = new OperatorMetrics();
    lines = [];
    const log: Logger = pino(
      new Writable({
        write(chunk, _encoding, done) {
          lines.push(JSON.parse(String(chunk)));
          done();
        },
      }),
    );
    // A status write answers the object as written, as the API server does.
    const kube = { patch: async (_t: unknown, _ns: unknown, _n: unknown, body: { status: unknown }) => ({ ...obj, ...body }) };
    controller = new Counting('test', CLIENTS, informer, {
      kube: kube as unknown as Kube,
      log,
      metrics,
      events: {} as EventRecorder,
      clock: new ManualClock(),
    });
    controller.start(1);
  });
  afterEach(() => controller.stop());

  async function enqueue(force = false): Promise<void> {
    controller.enqueue('ns', 'c', force);
    await settle();
  }

  it('reconciles once, then skips events that change nothing it depends on', async function () {
    await enqueue();
    await enqueue();
    await enqueue();
    expect(controller.calls).to.deep.equal([false]);
    const skipped = (await metrics.reconciles.get()).values.find((v) => v.labels.result === 'skipped');
    expect(skipped?.value).to.equal(2);
  });

  it('works again when a dependency, the generation or a resync asks for it', async function () {
    await enqueue();
    controller.dependency = 'v2'; // e.g. the Secret's resourceVersion
    await enqueue();
    obj.metadata.generation = 2; // a spec change (status still at 1)
    await enqueue();
    obj.status!.observedGeneration = 2;
    await enqueue(); // generation 2 was just done: skipped
    await enqueue(true); // the periodic resync (drift repair)
    expect(controller.calls).to.deep.equal([false, false, false, true]);
  });

  it('never skips an object that did not become ready', async function () {
    controller.ready = false;
    await enqueue();
    await enqueue();
    expect(controller.calls).to.have.length(2);
  });

  it('logs an unexpected reconcile error with its stack and cause, and retries it', async function () {
    controller.failure = new Error('could not write the record', { cause: new Error('connection refused') });
    await enqueue();
    const line = lines.find((l) => l.msg === 'reconcile failed; retrying');
    expect(line).to.deep.include({ controller: 'test', key: 'ns/c', retryInMs: 250 });
    expect(line.err.message).to.include('could not write the record');
    expect(line.err.stack).to.match(/could not write the record\n\s+at /);
    expect(JSON.stringify(line.err)).to.include('connection refused');
    expect(controller.queue.failuresOf('ns/c')).to.equal(1);
  });
});

/** Ready, Reconciling and Stalled of an object, as "status reason @observedGeneration". */
function kstatusConditions(obj: Resource | undefined): Record<string, string> {
  const shown: Record<string, string> = {};
  for (const c of obj?.status?.conditions ?? []) {
    if (['Ready', 'Reconciling', 'Stalled'].includes(c.type)) shown[c.type] = `${c.status} ${c.reason} @${c.observedGeneration}`;
  }
  return shown;
}

describe('kstatus conditions: Reconciling and Stalled next to Ready', function () {
  const db = recordsDatabase();
  const NS = 'team-a';
  let h: OperatorHarness;
  beforeEach(() => {
    h = new OperatorHarness(db.pool);
  });

  const client = (name: string, spec: Record<string, unknown> = {}): ClientResource => ({
    metadata: { name, namespace: NS },
    spec: { grant_types: ['client_credentials'], ...spec },
  });

  it('a resource that waits for something that may still appear is Reconciling; once in place, Ready and neither', async function () {
    h.kube.put(CLIENTS, client('orders', { secretRef: { name: 'orders-credentials' } }));
    await h.reconcile(h.clients, NS, 'orders');
    expect(kstatusConditions(h.object(CLIENTS, NS, 'orders'))).to.deep.equal({
      Ready: 'False BoxNotFound @1',
      Reconciling: 'True BoxNotFound @1',
      Stalled: 'False BoxNotFound @1',
    });
    h.kube.put(BOXES, { metadata: { name: 'auth', namespace: NS }, spec: {} });
    await h.reconcile(h.clients, NS, 'orders');
    expect(kstatusConditions(h.object(CLIENTS, NS, 'orders'))).to.include({ Reconciling: 'True BoxNotReady @1' });
    await h.reconcile(h.boxes, NS, 'auth');
    expect(kstatusConditions(h.object(BOXES, NS, 'auth'))).to.deep.equal({
      Ready: 'True Provisioned @1',
      Reconciling: 'False Provisioned @1',
      Stalled: 'False Provisioned @1',
    });
    await h.reconcile(h.clients, NS, 'orders');
    expect(kstatusConditions(h.object(CLIENTS, NS, 'orders'))).to.include({ Reconciling: 'True SecretNotFound @1' });
    await h.kube.create(SECRETS, NS, { metadata: { name: 'orders-credentials' }, stringData: { 'client-secret': 'a-long-enough-secret' } });
    await h.reconcile(h.clients, NS, 'orders');
    const orders = h.object<ClientResource>(CLIENTS, NS, 'orders')!;
    expect(kstatusConditions(orders)).to.deep.equal({
      Ready: 'True Reconciled @1',
      Reconciling: 'False Reconciled @1',
      Stalled: 'False Reconciled @1',
    });
    const reconciling = orders.status!.conditions!.find((c) => c.type === 'Reconciling')!;
    expect(reconciling.message).to.equal('Client orders is served by Box auth at http://auth.team-a.svc');
  });

  it('a resource that cannot go on until a person changes something is Stalled, not Reconciling', async function () {
    await h.readyBox(NS);
    h.kube.put(BOXES, { metadata: { name: 'second', namespace: NS, creationTimestamp: '2027-01-01T00:00:00Z' }, spec: {} });
    h.kube.put(CLIENTS, client('billing', { secretRef: { name: 'short' } }));
    await h.kube.create(SECRETS, NS, { metadata: { name: 'short' }, stringData: { 'client-secret': 'short' } });
    h.kube.put(ACCESS_POLICIES, { metadata: { name: 'bad', namespace: NS }, spec: { engine: 'json-schema', schema: { type: 'nope' } } });
    await h.reconcile(h.boxes, NS, 'second');
    await h.reconcile(h.clients, NS, 'billing');
    await h.reconcile(h.policies, NS, 'bad');
    expect(kstatusConditions(h.object<BoxResource>(BOXES, NS, 'second'))).to.deep.equal({
      Ready: 'False DuplicateBox @1',
      Reconciling: 'False DuplicateBox @1',
      Stalled: 'True DuplicateBox @1',
    });
    expect(kstatusConditions(h.object<ClientResource>(CLIENTS, NS, 'billing'))).to.include({
      Reconciling: 'False SecretTooShort @1',
      Stalled: 'True SecretTooShort @1',
    });
    expect(kstatusConditions(h.object<AccessPolicyResource>(ACCESS_POLICIES, NS, 'bad'))).to.include({
      Reconciling: 'False InvalidPolicy @1',
      Stalled: 'True InvalidPolicy @1',
    });
    // Fixed by a person: no longer stalled.
    await h.kube.patch(SECRETS, NS, 'short', { stringData: { 'client-secret': 'now-long-enough' } });
    await h.reconcile(h.clients, NS, 'billing');
    expect(kstatusConditions(h.object<ClientResource>(CLIENTS, NS, 'billing'))).to.include({ Stalled: 'False Reconciled @1' });
  });

  it('turns Reconciling True as work on a new generation begins, Ready and observedGeneration telling of the last one until done', async function () {
    await h.readyBox(NS);
    h.kube.put(ACCESS_POLICIES, { metadata: { name: 'p', namespace: NS }, spec: { engine: 'allow' } });
    await h.reconcile(h.policies, NS, 'p');
    const seen: AccessPolicyResource[] = [];
    h.kube.cache<AccessPolicyResource>(ACCESS_POLICIES).on((_event, obj) => seen.push(structuredClone(obj)));
    await h.kube.patch(ACCESS_POLICIES, NS, 'p', { spec: { description: 'generation 2' } });
    await h.reconcile(h.policies, NS, 'p');
    const [edited, begun, done] = seen;
    expect(seen).to.have.length(3); // the edit, then two status writes
    expect(edited!.metadata.generation).to.equal(2);
    expect(begun!.status!.observedGeneration).to.equal(1);
    expect(kstatusConditions(begun)).to.deep.equal({
      Ready: 'True Reconciled @1',
      Reconciling: 'True Progressing @2',
      Stalled: 'False Progressing @2',
    });
    expect(begun!.status!.conditions!.find((c) => c.type === 'Reconciling')!.message).to.equal('working on generation 2');
    expect(done!.status!.observedGeneration).to.equal(2);
    expect(kstatusConditions(done)).to.deep.equal({
      Ready: 'True Reconciled @2',
      Reconciling: 'False Reconciled @2',
      Stalled: 'False Reconciled @2',
    });
    // A reconcile of a generation already done writes nothing of the kind.
    await h.reconcile(h.policies, NS, 'p');
    expect(seen).to.have.length(3);
  });

  it('a new resource is Reconciling from the first write, before its reconcile is done', async function () {
    await h.readyBox(NS);
    const seen: ClientResource[] = [];
    h.kube.cache<ClientResource>(CLIENTS).on((_event, obj) => seen.push(structuredClone(obj)));
    h.kube.put(CLIENTS, client('orders'));
    await h.reconcile(h.clients, NS, 'orders');
    const firstStatus = seen.find((o) => o.status);
    expect(firstStatus!.status!.observedGeneration).to.equal(undefined);
    expect(kstatusConditions(firstStatus)).to.deep.equal({ Reconciling: 'True Progressing @1', Stalled: 'False Progressing @1' });
  });
});
