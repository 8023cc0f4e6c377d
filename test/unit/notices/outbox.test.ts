// The decisions of the outbox of notices, as pure functions (api/notices/outbox.ts, post.ts,
// allow-list.ts): the wait after a failure, the lease against the deadline, which notices a
// give-up may become (never to the destination it is about, none of a give-up of a give-up), when
// a notice is given up, a receiver's URL judged before it is resolved, and the runtime allow-list.
import { expect } from 'chai';
import type { AuditEvent } from '../../../api/audit.js';
import { noticeSettingsProblems } from '../../../api/notices/allow-list.js';
import { NoticeRefused, type BoxEvent } from '../../../api/notices/kinds.js';
import { draftsToKeep, givesUp, leaseSeconds, retryDelaySeconds } from '../../../api/notices/outbox.js';
import { receiverUrlProblem, receiverUrlShapeProblem, type ReceiverRules } from '../../../api/notices/post.js';
import { parseCidr } from '../../../api/outbound.js';

const event = (e: AuditEvent, facts: BoxEvent['facts'] = {}): BoxEvent => ({ id: '1', at: new Date(), event: e, facts });
const givenUp = (kind: string, destination: string): AuditEvent => ({ event: 'notice', action: 'given-up', kind, destination });
const drafts = [
  { destination: 'a', payload: {} },
  { destination: 'b', payload: {} },
];
const rules: ReceiverRules = { allowed: [], boxUrl: 'https://box.example:8443', timeoutMs: 1000 };

describe('notices: the outbox decides', function () {
  it('waits the first delay after a failure, doubling, up to the longest', function () {
    expect([1, 2, 3, 4, 5, 9, 100].map((a) => retryDelaySeconds(a, 5, 60))).to.deep.equal([5, 10, 20, 40, 60, 60, 60]);
    expect(retryDelaySeconds(0, 5, 60)).to.equal(5);
  });

  it('leases a notice longer than the deadline of its send', function () {
    for (const ms of [100, 1000, 10_000, 120_000]) expect(leaseSeconds(ms) * 1000).to.be.above(ms);
  });

  it('makes every notice of an event that is not a give-up', function () {
    expect(draftsToKeep('webhook', event({ event: 'session_closed', sessions: ['s'], how: 'api', by: {} }), drafts)).to.deep.equal(drafts);
  });

  it('never tells a give-up to the destination it is about, but to the others', function () {
    expect(draftsToKeep('webhook', event(givenUp('webhook', 'a')), drafts)).to.deep.equal([drafts[1]]);
    // Another kind's destination of the same name is another destination.
    expect(draftsToKeep('ssf', event(givenUp('webhook', 'a')), drafts)).to.deep.equal(drafts);
  });

  it('tells no one of the give-up of a notice that told of a give-up (no loop between dead receivers)', function () {
    expect(draftsToKeep('webhook', event(givenUp('webhook', 'a'), { quietGiveUp: true }), drafts)).to.deep.equal([]);
  });

  it('gives up a notice its kind refuses at once, or one failing past its kind time', function () {
    const kind = { giveUpAfterMs: 60_000 };
    const createdAt = new Date(1_000_000);
    expect(givesUp(new Error('503'), { createdAt }, kind, 1_000_000 + 59_999)).to.equal(false);
    expect(givesUp(new Error('503'), { createdAt }, kind, 1_000_000 + 60_000)).to.equal(true);
    expect(givesUp(new NoticeRefused('gone'), { createdAt }, kind, 1_000_001)).to.equal(true);
  });
});

describe('notices: a receiver URL', function () {
  it('must be https, without user, password or fragment', function () {
    expect(receiverUrlShapeProblem('https://rp.example/logout', rules)).to.equal(undefined);
    expect(receiverUrlShapeProblem('ftp://rp.example/logout', rules)).to.match(/https/);
    expect(receiverUrlShapeProblem('https://u:p@rp.example/logout', rules)).to.match(/user or password/);
    expect(receiverUrlShapeProblem('https://rp.example/logout#x', rules)).to.match(/fragment/);
    expect(receiverUrlShapeProblem('not a url', rules)).to.match(/not a URL/);
  });

  it('is never the box itself, by its own host and port', function () {
    expect(receiverUrlShapeProblem('https://box.example:8443/anything', rules)).to.match(/box itself/);
    expect(receiverUrlShapeProblem('http://127.0.0.1:8443/x', { ...rules, allowed: [['127.0.0.0', 8]] })).to.match(/box itself/);
    expect(receiverUrlShapeProblem('https://box.example/other-port', rules)).to.equal(undefined);
  });

  it('refuses loopback, private, link-local and metadata addresses unless allowed', function () {
    for (const url of [
      'https://127.0.0.1/x',
      'https://[::1]/x',
      'https://10.1.2.3/x',
      'https://169.254.169.254/latest/meta-data',
      'https://[::ffff:192.168.0.1]/x',
      'https://0.0.0.0/x',
    ]) {
      expect(receiverUrlShapeProblem(url, rules), url).to.match(/is refused/);
    }
    expect(receiverUrlShapeProblem('https://127.0.0.1:31443/x', { ...rules, allowed: [['127.0.0.1', 32]] })).to.equal(undefined);
  });

  it('is plain http only to an address the box allows', function () {
    expect(receiverUrlShapeProblem('http://93.184.216.34/x', rules)).to.match(/https/);
    expect(receiverUrlShapeProblem('http://10.0.0.7/x', { ...rules, allowed: [['10.0.0.0', 8]] })).to.equal(undefined);
  });

  it('is refused at registration when its name resolves to a refused address', async function () {
    expect(await receiverUrlProblem('https://localhost/x', rules)).to.match(/is refused/);
    expect(
      await receiverUrlProblem('http://localhost:1/x', {
        ...rules,
        allowed: [
          ['127.0.0.0', 8],
          ['::1', 128],
        ],
      }),
    ).to.equal(undefined);
    expect(await receiverUrlProblem('https://no-such-host.invalid/x', rules)).to.match(/does not resolve/);
  });
});

describe('notices: the allow-list written at runtime', function () {
  it('takes addresses and CIDRs, and nothing else', function () {
    expect(noticeSettingsProblems({ allowed_addresses: ['127.0.0.1', '10.0.0.0/8', 'fd00::/8'] })).to.deep.equal({});
    expect(noticeSettingsProblems({ allowed_addresses: [] })).to.deep.equal({});
    expect(noticeSettingsProblems({ allowed_addresses: ['localhost'] }).allowed_addresses![0]).to.include('"localhost"');
    expect(noticeSettingsProblems({ allowed_addresses: ['10.0.0.0/33'] })).to.have.property('allowed_addresses');
    expect(noticeSettingsProblems({ allowed_addresses: [7] })).to.have.property('allowed_addresses');
    expect(noticeSettingsProblems({ allowed_addresses: '127.0.0.1' })).to.have.property('allowed_addresses');
    expect(noticeSettingsProblems(null)).to.have.property('allowed_addresses');
    expect(noticeSettingsProblems({ allowed_addresses: Array(101).fill('10.0.0.1') })).to.have.property('allowed_addresses');
  });

  it('reads an address as its one-address range', function () {
    expect(parseCidr('127.0.0.1')).to.deep.equal(['127.0.0.1', 32]);
    expect(parseCidr('::1')).to.deep.equal(['::1', 128]);
    expect(parseCidr('10.0.0.0/8')).to.deep.equal(['10.0.0.0', 8]);
    expect(parseCidr('10.0.0.0/x')).to.equal(undefined);
  });
});
