import { expect } from 'chai';
import { Argon2Abandoned, Argon2Busy, Argon2Gate, generatePassword, hashSecret, SecretVerifier } from '../../../api/credentials/secrets.js';

describe('client secret verifier', function () {
  it('remembers a secret verified against a hash, and only that secret with that hash', async function () {
    const verifier = new SecretVerifier();
    const hash = await hashSecret('right-secret');
    expect(await verifier.verify('c', hash, 'right-secret')).to.equal(true);
    expect(await verifier.verify('c', hash, 'wrong-secret')).to.equal(false);
    expect(await verifier.verify('c', await hashSecret('other-secret'), 'right-secret')).to.equal(false);
  });

  it('remember() vouches for a secret just hashed without argon2; anything else is still checked', async function () {
    const verifier = new SecretVerifier();
    // Not an argon2 hash at all: only the remembered pair can pass.
    verifier.remember('c', 'unverifiable', 'fresh-secret');
    expect(await verifier.verify('c', 'unverifiable', 'fresh-secret')).to.equal(true);
    expect(await verifier.verify('c', 'unverifiable', 'another-secret')).to.equal(false);
    expect(await verifier.verify('c', 'changed-hash', 'fresh-secret')).to.equal(false);
  });
});

describe('argon2 lanes', function () {
  const outcome = (hash: Promise<unknown>): Promise<string> =>
    hash.then(
      () => 'hashed',
      (err: unknown) => (err instanceof Argon2Busy ? 'busy' : 'failed'),
    );

  it('sign-ups hash one at a time, wait behind everyone else, and beyond their own bound are refused alone', async function () {
    const gate = new Argon2Gate({ maxWaiting: 32, signUpMaxWaiting: 2 });
    const argon2Waiting = (): ReturnType<Argon2Gate['waitingByLane']> => gate.waitingByLane();
    const hashSecret = (secret: string, lane?: 'write' | 'sign-up'): Promise<string> => gate.hash(secret, lane);
    // One sign-up runs; two wait (not on the free slot: that stays for the others); two are refused at once.
    const signUps = Array.from({ length: 5 }, () => outcome(hashSecret('a-password', 'sign-up')));
    expect(argon2Waiting()['sign-up']).to.equal(2);
    // An admin's write takes the free slot at once; a second one waits...
    const writes = [outcome(hashSecret('a-password')), outcome(hashSecret('a-password'))];
    expect(argon2Waiting()).to.include({ write: 1, 'sign-up': 2 });
    // ...and gets the first slot to come free, ahead of the sign-ups that waited longer.
    await Promise.race([signUps[0], writes[0]]);
    expect(argon2Waiting()).to.include({ write: 0, 'sign-up': 2 });
    expect(await Promise.all(signUps)).to.deep.equal(['hashed', 'hashed', 'hashed', 'busy', 'busy']);
    expect(await Promise.all(writes)).to.deep.equal(['hashed', 'hashed']);
    expect(argon2Waiting()).to.deep.equal({ 'sign-in': 0, write: 0, client: 0, 'sign-up': 0 });
  });

  it("boxes take turns: one box's flood of hashes fills its own queue, and holds another box's run by one of its own per slot", async function () {
    const [flooding, other] = [new Argon2Gate({ maxWaiting: 8, signUpMaxWaiting: 4 }), new Argon2Gate()];
    const order: string[] = [];
    const run = (gate: Argon2Gate, name: string): Promise<string> =>
      outcome(gate.verify('not-a-hash', 'x', 'client').then(() => void order.push(name)));
    // Two run, eight wait: the flooding box's queue is full, and its next is refused; the other box's is not.
    const flood = Array.from({ length: 11 }, (_, i) => run(flooding, `a${i}`));
    const others = [run(other, 'b0'), run(other, 'b1')];
    expect(flooding.waitingByLane().client).to.equal(8);
    expect(other.waitingByLane().client).to.equal(2);
    expect(await Promise.all([...flood, ...others])).to.deep.equal([...Array(10).fill('hashed'), 'busy', 'hashed', 'hashed']);
    // The two that ran at once, then turns: the other box's runs come next, one after each of the flood's.
    expect(order.indexOf('b0')).to.be.lessThan(5);
    expect(order.indexOf('b1')).to.be.lessThan(7);
  });

  it("a run still waiting when its request's client goes leaves the queue at once and never runs; one started goes on", async function () {
    const gate = new Argon2Gate({ maxWaiting: 2, signUpMaxWaiting: 2 });
    const ran: string[] = [];
    const [left, stays] = [new AbortController(), new AbortController()];
    const run = (name: string, gone?: AbortSignal): Promise<string> =>
      outcome(gate.verify('not-a-hash', 'x', 'client', gone).then(() => void ran.push(name)));
    const abandoned = (p: Promise<unknown>): Promise<boolean> =>
      p.then(
        () => false,
        (err: unknown) => err instanceof Argon2Abandoned,
      );
    // (No await before the abort: these checks end as soon as they start.) Both slots are taken,
    // one by a request whose client will go: started, it runs on. Two wait; a third is refused.
    const started = [run('started', left.signal), run('other')];
    const waitingLeft = abandoned(
      gate
        .until(left.signal)
        .verify('not-a-hash', 'x', 'client')
        .then(() => void ran.push('waiting')),
    );
    const waitingStays = run('stays', stays.signal);
    const refused = run('refused');
    left.abort();
    expect(gate.waitingByLane().client, 'dropped at once').to.equal(1);
    // Its place is free for the next request.
    const next = run('next');
    expect(await refused).to.equal('busy');
    expect(await waitingLeft, 'dropped, failing as a full queue does').to.equal(true);
    expect(await Promise.all([...started, waitingStays, next])).to.deep.equal(['hashed', 'hashed', 'hashed', 'hashed']);
    expect(ran).to.have.members(['started', 'other', 'stays', 'next']);
    // A request whose client had gone before it asked is not queued at all.
    expect(await abandoned(gate.hash('a-password', 'write', left.signal))).to.equal(true);
    expect(gate.waitingByLane()).to.deep.equal({ 'sign-in': 0, write: 0, client: 0, 'sign-up': 0 });
  });
});

describe('generated passwords', function () {
  it('are 24 random characters, or as many as the box asks when that is more (up to 64)', function () {
    expect(generatePassword(8)).to.match(/^[A-Za-z0-9_-]{24}$/);
    expect(generatePassword(30)).to.have.length(30);
    expect(generatePassword(64)).to.have.length(64);
    expect(generatePassword(8)).to.not.equal(generatePassword(8));
  });
});
