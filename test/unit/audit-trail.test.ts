// The audit trail's pure parts: which events it keeps and the columns it searches them by
// (api/audit.ts auditRow), which records an event names for whom may see it (recordsNamedBy),
// what a write changed (api/record-changes.ts), the query GET /AuditEvent reads, and the times
// `boxauth events` takes.
import { expect } from 'chai';
import { pino } from 'pino';
import {
  Audit,
  auditRow,
  isBoxChange,
  isChange,
  KEPT_PER_CALLER_PER_MINUTE,
  recordsNamedBy,
  type AuditEvent,
  type AuditRow,
  type AuditTrail,
} from '../../api/audit.js';
import { recordChanges } from '../../api/record-changes.js';
import { auditSearchOf } from '../../api/http/routes/audit-events.js';
import { timeArgument } from '../../api/cli/commands/events.js';
import { ApiError } from '../../api/errors.js';

const by = { client: 'boxauth-admin', user: '7', session: 's-1' };

describe('the audit trail: what it keeps, and how it is searched', function () {
  it("leaves the token endpoint's own events and the decisions allowed to the log stream", function () {
    expect(auditRow({ event: 'token_issued', client: 'c', grant: 'client_credentials', session: 's' })).to.equal(undefined);
    expect(auditRow({ event: 'token_refused', error: 'invalid_client', address: '::1' })).to.equal(undefined);
    const decision = {
      event: 'decision' as const,
      id: 'd-1',
      app: 'wiki',
      door: 'http',
      status: 403,
      reason: 'r',
      policies: [],
      user: '9',
    };
    expect(auditRow({ ...decision, allowed: true })).to.equal(undefined);
    const refused = auditRow({ ...decision, allowed: false })!;
    expect(refused).to.include({
      outcome: 'failure',
      action: 'refused',
      actorUser: '9',
      subjectUser: '9',
      resourceType: 'Decision',
      resourceId: 'd-1',
    });
  });

  it('files a change under who did it, whom and what it concerns', function () {
    const changed = auditRow({ event: 'record_changed', kind: 'User', id: '12', action: 'changed', by, changes: {} })!;
    expect(changed).to.include({ outcome: 'success', action: 'changed', actorClient: 'boxauth-admin', actorUser: '7', subjectUser: '12' });
    expect(changed).to.include({ resourceType: 'User', resourceId: '12' });
    const client = auditRow({ event: 'record_changed', kind: 'Client', id: 'orders', action: 'deleted', by })!;
    expect(client).to.include({ client: 'orders', subjectUser: null });
    const failed = auditRow({ event: 'sign_in', outcome: 'failure', user: '3', address: '::1', reason: 'wrong password' })!;
    expect(failed).to.include({ outcome: 'failure', action: 'failure', actorUser: '3', subjectUser: '3' });
    const closed = auditRow({ event: 'session_closed', sessions: ['a', 'b'], how: 'deactivated', by })!;
    expect(closed).to.include({ action: 'deactivated', resourceType: null });
  });

  it('names the records an event is about, as the API reads them', function () {
    const row = (event: AuditEvent) => auditRow(event)!;
    expect(recordsNamedBy(row({ event: 'record_changed', kind: 'App', id: 'wiki', action: 'created', by }))).to.deep.equal([
      ['App', 'wiki'],
    ]);
    expect(recordsNamedBy(row({ event: 'record_changed', kind: 'User', id: '5', action: 'created', by }))).to.deep.equal([['users', '5']]);
    expect(recordsNamedBy(row({ event: 'record_changed', kind: 'Group', id: '2', action: 'created', by }))).to.deep.equal([
      ['groups', '2'],
    ]);
    const refused = row({
      event: 'decision',
      id: 'd',
      app: 'wiki',
      door: 'grpc',
      allowed: false,
      status: 403,
      reason: 'r',
      policies: [],
      client: 'cli',
    });
    expect(recordsNamedBy(refused)).to.deep.equal([
      ['App', 'wiki'],
      ['Client', 'cli'],
    ]);
    // A sign-in through a provider names the provider: its reader alone learns who is linked there, and as whom.
    const linked = row({ event: 'upstream', action: 'linked', provider: 'corp', subject: 'cn=ann', user: '5', by: { user: '5' } });
    expect(recordsNamedBy(linked)).to.deep.equal([
      ['IdentityProvider', 'corp'],
      ['users', '5'],
    ]);
    expect(recordsNamedBy(row({ event: 'upstream', action: 'refused', provider: 'corp', reason: 'r' }))).to.deep.equal([
      ['IdentityProvider', 'corp'],
    ]);
    // A browser session strengthened is the person's: filed under them, seen by whoever may read them.
    const strengthened = row({
      event: 'session_strengthened',
      action: 'factor-given',
      user: '5',
      sid: 'sid-1',
      from: { acr: 'urn:boxauth:acr:password', amr: ['pwd'] },
      to: { acr: 'urn:boxauth:acr:mfa', amr: ['pwd', 'otp', 'mfa'] },
      by: { user: '5' },
      address: '::1',
    });
    expect(strengthened).to.include({ action: 'factor-given', outcome: 'success', actorUser: '5', subjectUser: '5', client: null });
    expect(recordsNamedBy(strengthened)).to.deep.equal([['users', '5']]);
    // A sign-in with an address nobody has names no record: only an administrator of the whole box sees it.
    expect(recordsNamedBy(row({ event: 'sign_in', outcome: 'failure', address: '::1', reason: 'unknown email' }))).to.deep.equal([]);
  });
});

describe('the audit trail: who acted, and what one caller may add', function () {
  const refusal = (n: number, by?: { client: string; session: string }): Extract<AuditEvent, { event: 'decision' }> => ({
    event: 'decision',
    id: `d-${n}`,
    app: 'wiki',
    door: 'authzen',
    allowed: false,
    status: 403,
    reason: 'no-policy',
    policies: [],
    client: `made-up-${n}`,
    ...(by ? { by } : {}),
  });

  it('files an AuthZEN refusal under the PEP that asked, never under the subject it named', function () {
    const named = auditRow({ ...refusal(1), client: 'root', by: { client: 'pep', session: 's-pep' } })!;
    expect(named).to.include({ actorClient: 'pep', actorUser: null, actorSession: 's-pep', client: 'root' });
    const { client: _named, ...aboutNobody } = refusal(2);
    const person = auditRow({ ...aboutNobody, user: '1', by: { client: 'pep', session: 's-pep' } })!;
    expect(person).to.include({ actorClient: 'pep', actorUser: null, subjectUser: '1' });
    // At a gate, who called is whom it was decided about.
    expect(auditRow({ ...refusal(3), client: 'caller', session: 's-c' })!).to.include({ actorClient: 'caller', actorSession: 's-c' });
  });

  it('keeps a refused write, logs a refused read; both name the caller', function () {
    const write = auditRow({
      event: 'api_refused',
      action: 'write',
      method: 'DELETE',
      path: '/AccessPolicy/admins-allow',
      kind: 'AccessPolicy',
      id: 'admins-allow',
      reason: 'no AccessPolicy allows it',
      by: { client: 'intruder', session: 's' },
    })!;
    expect(write).to.include({ outcome: 'failure', action: 'write', actorClient: 'intruder', resourceType: 'AccessPolicy' });
    expect(auditRow({ event: 'api_refused', action: 'read', method: 'GET', path: '/users', reason: 'r', by: { client: 'x' } })).to.equal(
      undefined,
    );
  });

  it('tells changes from what anyone can cause at will', function () {
    const change = (event: AuditEvent): boolean => isChange(auditRow(event)!);
    expect(change({ event: 'record_changed', kind: 'AccessPolicy', id: 'p', action: 'changed', by })).to.equal(true);
    expect(change({ event: 'account', action: 'deactivated', user: '3', by })).to.equal(true);
    expect(change({ event: 'account', action: 'password-reset-requested', email: 'a@b', by: {} })).to.equal(false);
    expect(change(refusal(1))).to.equal(false);
    expect(change({ event: 'sign_in', outcome: 'success', user: '3', address: '::1' })).to.equal(false);
    expect(change({ event: 'upstream', action: 'refused', provider: 'corp', reason: 'r' })).to.equal(false);
  });

  it("tells the box's changes from a person's own, which give way first under the cap", function () {
    const boxChange = (event: AuditEvent): boolean => isBoxChange(auditRow(event)!);
    const own = { user: '3', session: 's' };
    expect(boxChange({ event: 'record_changed', kind: 'Client', id: 'c', action: 'changed', by: { user: '3' } })).to.equal(true);
    expect(boxChange({ event: 'factor', action: 'recovery-codes-made', user: '3', kind: 'recovery-codes', by: own })).to.equal(false);
    expect(boxChange({ event: 'account', action: 'password-changed', user: '3', by: own })).to.equal(false);
    // The same kinds of change, made by a client of the box's API (an administrator, a directory): the box's.
    expect(boxChange({ event: 'factor', action: 'reset', user: '3', by: { client: 'root' } })).to.equal(true);
    expect(boxChange({ event: 'account', action: 'password-reset-requested', email: 'a@b', by: { client: 'root' } })).to.equal(false);
  });

  it('keeps KEPT_PER_CALLER_PER_MINUTE refusals of one caller a minute, counts the rest, and says so once the minute ends', function () {
    const kept: AuditRow[] = [];
    const leftOut: string[] = [];
    const trail: AuditTrail = { within: async () => undefined, soon: (row) => kept.push(row), leftOut: (why) => leftOut.push(why) };
    const silent = pino({ level: 'silent' });
    const audit = new Audit(silent, silent, trail);
    const minute = Date.parse('2026-11-26T10:00:00Z');
    const pep = { client: 'pep', session: 's-pep' };
    for (let n = 0; n < KEPT_PER_CALLER_PER_MINUTE + 40; n++) audit.record(refusal(n, pep), minute + n);
    // Another caller has a bound of its own.
    audit.record(refusal(1000, { client: 'other', session: 's-o' }), minute + 500);
    expect(kept.filter((r) => r.actorClient === 'pep')).to.have.length(KEPT_PER_CALLER_PER_MINUTE);
    expect(kept.filter((r) => r.actorClient === 'other')).to.have.length(1);
    expect(leftOut).to.deep.equal(Array(40).fill('caller'));
    // The next minute: one event says what was left out, and the caller starts afresh.
    audit.record(refusal(2000, pep), minute + 60_000);
    const summary = kept.find((r) => r.event === 'left_out')!;
    expect(summary).to.include({ actorClient: 'pep', outcome: 'failure' });
    expect(summary.detail).to.deep.include({
      events: { decision: 40 },
      since: '2026-11-26T10:00:00.000Z',
      until: '2026-11-26T10:01:00.000Z',
    });
    expect(kept.at(-1)!.detail).to.include({ id: 'd-2000' });
    expect(kept.filter((r) => r.event === 'left_out')).to.have.length(1);
  });
});

describe('what a write changed (recordChanges)', function () {
  it('lists the fields that differ, before → after, and leaves bookkeeping out', function () {
    const before = { id: 'p', description: 'old', link: [{ id: 'a' }], meta: { version: 1 } };
    const after = { id: 'p', description: 'new', link: [{ id: 'a' }], engine: 'allow', meta: { version: 2 } };
    expect(recordChanges(before, after)).to.deep.equal({ description: { from: 'old', to: 'new' }, engine: { to: 'allow' } });
    expect(recordChanges(undefined, { id: 'x' })).to.deep.equal({ id: { to: 'x' } });
    expect(recordChanges({ id: 'x' }, undefined)).to.deep.equal({ id: { from: 'x' } });
  });

  it('says a secret changed, never what it is', function () {
    expect(recordChanges({ id: 'c' }, { id: 'c' }, ['secret'])).to.deep.equal({ secret: { to: '(changed)' } });
  });
});

describe('GET /AuditEvent: the query', function () {
  it('reads the filters, the page size and the cursors', function () {
    const search = auditSearchOf({
      actor: 'root',
      user: '5',
      resource_type: 'App',
      outcome: 'failure',
      _count: '10',
      _cursor: '99',
      since: '2026-11-26',
    });
    expect(search).to.deep.include({ actor: 'root', user: '5', resourceType: 'App', outcome: 'failure', count: 10, before: '99' });
    expect(search.since?.toISOString()).to.equal('2026-11-26T00:00:00.000Z');
    expect(auditSearchOf({})).to.deep.equal({ count: 100 });
  });

  it('refuses what it cannot read with a 400 that says why', function () {
    for (const query of [
      { nope: '1' },
      { since: 'yesterday' },
      { _count: '0' },
      { _cursor: '-1' },
      { _cursor: '1', _after: '2' },
      { user: ['1', '2'] },
    ]) {
      expect(() => auditSearchOf(query), JSON.stringify(query))
        .to.throw(ApiError)
        .with.property('status', 400);
    }
  });
});

describe('boxauth events: --since and --until', function () {
  const now = Date.parse('2026-11-26T10:00:00Z');
  it('takes a while ago or a time', function () {
    expect(timeArgument('since', '10m', now)).to.equal('2026-11-26T09:50:00.000Z');
    expect(timeArgument('since', '2d', now)).to.equal('2026-11-24T10:00:00.000Z');
    expect(timeArgument('until', '2026-11-26T08:00:00Z', now)).to.equal('2026-11-26T08:00:00Z');
    expect(() => timeArgument('since', 'last week', now)).to.throw(/--since must be a time/);
  });
});
