import { expect } from 'chai';
import { EventEmitter } from 'node:events';
import { pino } from 'pino';
import { Shutdown } from '../../api/shutdown.js';

/** A Shutdown on an emitter standing for the process, with what it logged, the exits it asked for and its deadline. */
function harness(stop: () => Promise<void>, serving = true) {
  const events = new EventEmitter();
  const lines: { level: number; msg: string; err?: { message: string; stack: string }; fault?: string }[] = [];
  const log = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  const exits: number[] = [];
  const deadlines: (() => void)[] = [];
  let stops = 0;
  const shutdown = new Shutdown(log, {
    faultDeadlineMs: 15_000,
    exit: (code) => void exits.push(code),
    later: (fn) => void deadlines.push(fn),
    events,
  }).install();
  if (serving)
    shutdown.serving(() => {
      stops++;
      return stop();
    });
  return { events, lines, exits, deadlines, stops: () => stops };
}

/** A stop the test ends by hand. */
function pendingStop(): { stop: () => Promise<void>; end: () => void } {
  let end = (): void => undefined;
  const done = new Promise<void>((resolve) => (end = resolve));
  return { stop: () => done, end };
}

const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('Shutdown', function () {
  it('a fault nothing handled is logged with its stack, then the process drains as on SIGTERM and exits 1', async function () {
    const { stop, end } = pendingStop();
    const h = harness(stop);
    h.events.emit('unhandledRejection', new Error('nobody awaited this'));
    await settle();
    expect(h.stops()).to.equal(1);
    expect(h.exits, 'not before the requests in flight are done').to.deep.equal([]);
    const fatal = h.lines.find((l) => l.level === 60)!;
    expect(fatal.msg).to.equal('a fault nothing handled: stopping, to be started afresh');
    expect(fatal.fault).to.equal('unhandledRejection');
    expect(fatal.err!.stack).to.include('nobody awaited this');
    end();
    await settle();
    expect(h.exits).to.deep.equal([1]);
  });

  it('a fault while stopping is logged and the stop goes on, once', async function () {
    const { stop, end } = pendingStop();
    const h = harness(stop);
    h.events.emit('SIGTERM');
    h.events.emit('uncaughtException', new Error('a socket closed under the drain'));
    h.events.emit('unhandledRejection', 'not even an Error');
    h.events.emit('SIGTERM');
    await settle();
    expect(h.stops()).to.equal(1);
    expect(h.exits).to.deep.equal([]);
    const fatal = h.lines.filter((l) => l.level === 60);
    expect(fatal.map((l) => l.msg)).to.deep.equal([
      'a fault nothing handled while stopping; the stop goes on',
      'a fault nothing handled while stopping; the stop goes on',
    ]);
    expect(fatal[1]!.err!.message).to.equal('a rejection with a value that is not an Error: not even an Error');
    end();
    await settle();
    expect(h.exits, 'the drain ended, but something went wrong: 1').to.deep.equal([1]);
  });

  it('SIGTERM alone drains and exits 0; a stop that fails exits 1', async function () {
    const clean = harness(async () => undefined);
    clean.events.emit('SIGTERM');
    await settle();
    expect(clean.exits).to.deep.equal([0]);
    const failing = harness(() => Promise.reject(new Error('pool.end failed')));
    failing.events.emit('SIGINT');
    await settle();
    expect(failing.exits).to.deep.equal([1]);
    expect(failing.lines.some((l) => l.msg === 'stop failed')).to.equal(true);
  });

  it('a stop after a fault that does not end in time is cut short', async function () {
    const h = harness(pendingStop().stop);
    h.events.emit('uncaughtException', new Error('boom'));
    await settle();
    expect(h.exits).to.deep.equal([]);
    expect(h.deadlines).to.have.length(1);
    h.deadlines[0]!();
    expect(h.exits).to.deep.equal([1]);
  });

  it('a fault during start-up, before anything serves, exits 1 at once; signals are not taken over until then', async function () {
    const h = harness(async () => undefined, false);
    expect(h.events.listenerCount('SIGTERM')).to.equal(0);
    h.events.emit('uncaughtException', new Error('at start-up'));
    await settle();
    expect(h.exits).to.deep.equal([1]);
  });
});
