import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { startAll } from '../../support/start-all.js';

/** A server of a test: listening on a port of its own, stopped with stop(). */
async function startServer(): Promise<{ port: number; stop(): Promise<void> }> {
  const server = http.createServer((_req, res) => res.end('up'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('startAll (several servers of a hook at once)', function () {
  it('gives each server, as Promise.all does', async function () {
    const [a, b] = await startAll([startServer(), startServer()]);
    try {
      expect(await (await fetch(`http://127.0.0.1:${a.port}/`)).text()).to.equal('up');
      expect(b.port).to.not.equal(a.port);
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
  });

  it('stops the servers that started when another failed to start, and throws its failure', async function () {
    let started: { port: number } | undefined;
    const failing = new Promise<never>((_resolve, reject) => setTimeout(() => reject(new Error('port 5 is in use')), 50));
    const error = await startAll([
      startServer().then((s) => {
        started = s;
        return s;
      }),
      failing,
    ]).then(
      () => undefined,
      (err: Error) => err,
    );
    expect(error?.message).to.equal('port 5 is in use');
    const answer = await fetch(`http://127.0.0.1:${started!.port}/`).then(
      () => 'answered',
      () => 'refused',
    );
    expect(answer).to.equal('refused');
  });
});
