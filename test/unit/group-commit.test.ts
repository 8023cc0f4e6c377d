import { expect } from 'chai';
import { GroupCommit } from '../../api/store/group-commit.js';

/** A batch function whose batches finish only when the test says so. */
function held<I>(): { batches: I[][]; run: (items: I[]) => Promise<string[]>; finish(i: number, err?: Error): void } {
  const batches: I[][] = [];
  const done: Array<(err?: Error) => void> = [];
  return {
    batches,
    run: (items) => new Promise((resolve, reject) => {
      batches.push(items);
      done.push((err) => (err ? reject(err) : resolve(items.map((item) => `done ${String(item)}`))));
    }),
    finish: (i, err) => done[i]!(err),
  };
}

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('group commit', function () {
  it('sends what arrives while batches are in flight together, and answers each item with its own result', async function () {
    const db = held<string>();
    const commits = new GroupCommit(db.run, { maxInFlight: 1 });
    const first = commits.submit('a');
    const later = ['b', 'c', 'd'].map((item) => commits.submit(item));
    await tick();
    expect(db.batches).to.deep.equal([['a']]);
    db.finish(0);
    expect(await first).to.equal('done a');
    await tick();
    expect(db.batches[1]).to.deep.equal(['b', 'c', 'd']);
    db.finish(1);
    expect(await Promise.all(later)).to.deep.equal(['done b', 'done c', 'done d']);
  });

  it('never puts two items with the same key in one batch', async function () {
    const db = held<string>();
    const commits = new GroupCommit(db.run, { maxInFlight: 1, key: (item) => item[0]! });
    const all = ['x0', 'a1', 'x1', 'b1', 'x2', 'a2'].map((item) => commits.submit(item));
    await tick();
    expect(db.batches).to.deep.equal([['x0']]);
    db.finish(0);
    await tick();
    expect(db.batches[1]).to.deep.equal(['a1', 'x1', 'b1']);
    db.finish(1);
    await tick();
    expect(db.batches[2]).to.deep.equal(['x2', 'a2']);
    db.finish(2);
    expect(await Promise.all(all)).to.have.length(6);
  });

  it('runs at most maxInFlight batches at once, of at most maxBatch items', async function () {
    const db = held<number>();
    const commits = new GroupCommit(db.run, { maxInFlight: 2, maxBatch: 2 });
    const all = [1, 2, 3, 4, 5, 6].map((item) => commits.submit(item));
    await tick();
    expect(db.batches).to.deep.equal([[1], [2]]);
    db.finish(1);
    await tick();
    expect(db.batches[2]).to.deep.equal([3, 4]);
    db.finish(0);
    db.finish(2);
    await tick();
    expect(db.batches.slice(3)).to.deep.equal([[5, 6]]);
    db.finish(3);
    expect(await Promise.all(all)).to.have.length(6);
  });

  it('a failed batch rejects every item in it, and later batches still run', async function () {
    const db = held<string>();
    const commits = new GroupCommit(db.run, { maxInFlight: 1 });
    const failing = commits.submit('a');
    const next = commits.submit('b');
    await tick();
    db.finish(0, new Error('connection lost'));
    await failing.then(() => expect.fail('should reject'), (err: Error) => expect(err.message).to.equal('connection lost'));
    await tick();
    db.finish(1);
    expect(await next).to.equal('done b');
  });
});
