// The skip rule of every controller: work happens when the generation, a
// dependency or a forced resync asks for it, and not for events that change
// nothing the reconcile depends on.
import { expect } from 'chai';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import type { Logger } from '../../../api/log.js';
import { Controller, type Outcome, type Resource } from '../../../operator/controller.js';
import type { EventRecorder } from '../../../operator/events.js';
import type { ObjectCache } from '../../../operator/informer.js';
import { CLIENTS, type Kube } from '../../../operator/kube.js';
import { OperatorMetrics } from '../../../operator/metrics.js';
import { ManualClock, settle } from '../../support/clock.js';

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
    controller = new Counting('test', CLIENTS, informer, {
      kube: {} as Kube,
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
