import { expect } from 'chai';
import { GroupCommit } from '../../../api/store/group-commit.js';

/** A batch function whose batches finish only when the test says so. */
function held<I>(): { batches: I[][]; run: (items: I[]) => Promise<string[]>; finish(i: number, err?: Error): void } {
  const batches: I[][] = [];
  const done: Array<(err?: Error) => void> = [];
  return {
    batches,
    run: (items) =>
      new Promise((resolve, reject) => {
        batches.push(items);
        done.push((err) => (err ? reject(err) : resolve(items.map((item) => `done ${String(item)}`))));
      }),
    finish: (i, err) => done[i]!(err),
  };
}

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** A batch function that refuses, as PostgreSQL does, any statement holding a bad item. */
function refusing(bad: (item: string) => boolean): { batches: string[][]; run: (items: string[]) => Promise<string[]> } {
  const batches: string[][] = [];
  return {
    batches,
    run: async (items) => {
      batches.push(items);
      await tick();
      const refused = items.find(bad);
      if (refused !== undefined) throw new Error(`invalid byte sequence in ${refused}`);
      return items.map((item) => `done ${item}`);
    },
  };
}

async function outcomes(promises: Promise<string>[]): Promise<string[]> {
  return Promise.all(
    promises.map((p) =>
      p.then(
        (r) => r,
        (err: Error) => `failed: ${err.message}`,
      ),
    ),
  );
}

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
    await failing.then(
      () => expect.fail('should reject'),
      (err: Error) => expect(err.message).to.equal('connection lost'),
    );
    await tick();
    db.finish(1);
    expect(await next).to.equal('done b');
  });

  it('a failed batch is committed again item by item: only the bad item fails', async function () {
    const db = refusing((item) => item.startsWith('bad'));
    const commits = new GroupCommit(db.run, { maxInFlight: 1 });
    const all = ['first', 'a', 'bad1', 'b', 'bad2', 'c'].map((item) => commits.submit(item));
    expect(await outcomes(all)).to.deep.equal([
      'done first',
      'done a',
      'failed: invalid byte sequence in bad1',
      'done b',
      'failed: invalid byte sequence in bad2',
      'done c',
    ]);
    expect(db.batches).to.deep.equal([['first'], ['a', 'bad1', 'b', 'bad2', 'c'], ['a'], ['bad1'], ['b'], ['bad2'], ['c']]);
  });

  it("retries hold their batch's slot, one at a time, so later items (and keys) wait for them", async function () {
    const db = refusing((item) => item === 'x-bad');
    const commits = new GroupCommit(db.run, { maxInFlight: 1, key: (item) => item[0]! });
    const first = commits.submit('w');
    const batch = ['x-bad', 'y'].map((item) => commits.submit(item));
    await tick();
    const later = ['x-later', 'z'].map((item) => commits.submit(item));
    expect(await outcomes([first, ...batch, ...later])).to.deep.equal([
      'done w',
      'failed: invalid byte sequence in x-bad',
      'done y',
      'done x-later',
      'done z',
    ]);
    expect(db.batches).to.deep.equal([['w'], ['x-bad', 'y'], ['x-bad'], ['y'], ['x-later', 'z']]);
  });

  it("does not retry item by item when the failure is no item's fault", async function () {
    const db = refusing(() => true);
    const commits = new GroupCommit(db.run, { maxInFlight: 1, isolate: () => false });
    const all = ['a', 'b', 'c'].map((item) => commits.submit(item));
    expect(await outcomes(all)).to.deep.equal([
      'failed: invalid byte sequence in a',
      'failed: invalid byte sequence in b',
      'failed: invalid byte sequence in b',
    ]);
    expect(db.batches).to.deep.equal([['a'], ['b', 'c']]);
  });
});
