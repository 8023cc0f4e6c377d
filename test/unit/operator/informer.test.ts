// The informer against a fake API server that misbehaves as real ones do: a
// watch answered with 410 Gone, a watch that hangs without a byte, a watch
// whose connection is cut. The server answers over loopback, so the tests wait
// for what it answered; the informer's own timers (watchdog, backoff) run on a
// ManualClock.
import { expect } from 'chai';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import { createLogger } from '../../../api/log.js';
import { Informer, type InformerEvent } from '../../../operator/informer.js';
import { CLIENTS, HttpKube, type KObject } from '../../../operator/kube.js';
import { OperatorMetrics } from '../../../operator/metrics.js';
import { ManualClock, until } from '../../support/clock.js';

/** The longest backoff after a first failure: 200 ms, jittered by up to 20 %. */
const FIRST_BACKOFF_MS = 240;
const obj = (name: string, rv: string): KObject => ({
  apiVersion: 'boxauth.io/v1alpha1',
  kind: 'Client',
  metadata: { name, namespace: 'ns', resourceVersion: rv },
});

type WatchBehaviour = (res: http.ServerResponse, rv: string) => void;

class FakeApiServer {
  lists: { items: KObject[]; rv: string }[] = [];
  watches: WatchBehaviour[] = [];
  listCalls = 0;
  watchCalls: string[] = [];
  private readonly server = http.createServer((req, res) => this.handle(req, res));
  private readonly open = new Set<http.ServerResponse>();

  async start(): Promise<string> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', () => r()));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const url = new URL(req.url!, 'http://x');
    if (url.searchParams.get('watch')) {
      this.watchCalls.push(url.searchParams.get('resourceVersion') ?? '');
      const behave = this.watches.shift() ?? ((r) => r.end());
      res.writeHead(200, { 'Content-Type': 'application/json' });
      this.open.add(res);
      res.on('close', () => this.open.delete(res));
      behave(res, url.searchParams.get('resourceVersion') ?? '');
      return;
    }
    this.listCalls++;
    const list = this.lists.length > 1 ? this.lists.shift()! : this.lists[0]!;
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify({ kind: 'ClientList', metadata: { resourceVersion: list.rv }, items: list.items }));
  }

  async stop(): Promise<void> {
    for (const res of this.open) res.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((r) => this.server.close(() => r()));
  }
}

describe('operator informer', function () {
  let api: FakeApiServer;
  let informer: Informer | undefined;
  let events: [InformerEvent, string, string][];
  let metrics: OperatorMetrics;
  let clock: ManualClock;

  async function start(idleMs = 5000): Promise<Informer> {
    const server = await api.start();
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'fake', server, skipTLSVerify: true }],
      users: [{ name: 'u', token: 't' }],
      contexts: [{ name: 'fake', cluster: 'fake', user: 'u' }],
      currentContext: 'fake',
    });
    metrics = new OperatorMetrics();
    clock = new ManualClock();
    const options = { type: CLIENTS, relistMs: 60_000, idleMs, clock };
    informer = new Informer(new HttpKube(kc), 'clients', options, createLogger('silent'), metrics);
    informer.on((event, o) => events.push([event, o.metadata.name, o.metadata.resourceVersion!]));
    informer.start();
    await informer.synced;
    return informer;
  }

  beforeEach(() => {
    api = new FakeApiServer();
    events = [];
  });
  afterEach(async () => {
    informer?.stop();
    await api.stop();
  });

  async function relists(cause: string): Promise<number> {
    const m = (await metrics.relists.get()).values.find((v) => v.labels.cause === cause);
    return m?.value ?? 0;
  }

  async function watchErrors(): Promise<number> {
    return (await metrics.watchErrors.get()).values[0]?.value ?? 0;
  }

  it("follows a watch from the list's resourceVersion", async function () {
    api.lists = [{ items: [obj('a', '1')], rv: '1' }];
    api.watches = [
      (res) => {
        res.write(`${JSON.stringify({ type: 'ADDED', object: obj('b', '2') })}\n`);
        res.write(`${JSON.stringify({ type: 'MODIFIED', object: obj('a', '3') })}\n`);
        res.write(`${JSON.stringify({ type: 'DELETED', object: obj('b', '4') })}\n`);
      },
    ];
    await start();
    await until(() => events.length >= 4, "the watch's three events");
    expect(api.watchCalls[0]).to.equal('1');
    expect(events).to.deep.equal([
      ['add', 'a', '1'],
      ['add', 'b', '2'],
      ['update', 'a', '3'],
      ['delete', 'b', '4'],
    ]);
    expect(informer!.list().map((o) => o.metadata.name)).to.deep.equal(['a']);
  });

  it('relists after 410 Gone and reports what changed meanwhile, deletions included', async function () {
    api.lists = [
      { items: [obj('a', '1'), obj('b', '1')], rv: '1' },
      { items: [obj('b', '7'), obj('c', '8')], rv: '9' },
    ];
    api.watches = [
      (res) => {
        res.write(
          `${JSON.stringify({ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version' } })}\n`,
        );
        res.end();
      },
    ];
    await start();
    await until(() => events.length >= 5 && api.watchCalls.length >= 2, 'the relist and the next watch');
    expect(events.slice(2)).to.deep.equal([
      ['delete', 'a', '1'],
      ['update', 'b', '7'],
      ['add', 'c', '8'],
    ]);
    expect(api.watchCalls.slice(0, 2)).to.deep.equal(['1', '9']);
    expect(await relists('gone')).to.equal(1);
  });

  it('cuts a watch that stays silent past idleMs, relists and carries on', async function () {
    api.lists = [
      { items: [obj('a', '1')], rv: '1' },
      { items: [obj('a', '5')], rv: '5' },
    ];
    api.watches = [
      () => {
        /* hang: headers sent, then nothing, never ends */
      },
    ];
    await start(300);
    await until(() => api.watchCalls.length === 1, 'the watch');
    await clock.advance(300); // silent all along: the watchdog cuts it
    await until(async () => (await watchErrors()) === 1, 'the watch error');
    await clock.advance(FIRST_BACKOFF_MS);
    await until(() => api.watchCalls.length === 2, 'the next watch');
    expect(events).to.deep.include(['update', 'a', '5']);
    expect(await relists('watchdog')).to.equal(1);
    expect(api.watchCalls).to.include('5');
  });

  it('survives a watch connection cut mid-stream', async function () {
    api.lists = [
      { items: [], rv: '1' },
      { items: [obj('z', '3')], rv: '3' },
    ];
    api.watches = [
      (res) => {
        res.write('{"type":"ADDED","object":');
        res.destroy();
      },
    ];
    await start();
    await until(async () => (await watchErrors()) === 1, 'the watch error');
    await clock.advance(FIRST_BACKOFF_MS);
    await until(() => events.length === 1, 'the relist');
    expect(events).to.deep.include(['add', 'z', '3']);
    expect(informer!.hasSynced).to.equal(true);
  });
});
