// The pure parts of the Shared Signals transmitter (api/ssf/): which events a box event makes, a
// stream's configuration as a receiver sends it, and the subjects a receiver names.
import { expect } from 'chai';
import type { AuditEvent } from '../../../api/audit.js';
import type { BoxEvent, EventFacts } from '../../../api/notices/kinds.js';
import { ApiError } from '../../../api/errors.js';
import {
  signalsOf,
  ACR_NAMESPACE,
  ASSURANCE_LEVEL_CHANGE,
  SESSION_REVOKED,
  CREDENTIAL_CHANGE,
  ACCOUNT_DISABLED,
  ACCOUNT_PURGED,
} from '../../../api/ssf/events.js';
import { eventsDelivered, patchedConfiguration, streamRequest, wholeConfiguration, POLL, PUSH } from '../../../api/ssf/streams.js';
import { personNamed, personSubject } from '../../../api/ssf/subjects.js';
import { transmitterMetadata } from '../../../api/ssf/metadata.js';

const boxEvent = (event: AuditEvent, facts: EventFacts = {}): BoxEvent => ({ id: '1', at: new Date(1_700_000_000_000), event, facts });
const ISSUER = 'https://auth.example.com';

describe('ssf: the events of a box event (api/ssf/events.ts)', function () {
  it('makes one session-revoked per person and browser session a close ended, none for a client’s own session', function () {
    const closed = [
      { session: 'a', client: 'app', user: 7, sid: 'sid-1' },
      { session: 'b', client: 'other', user: 7, sid: 'sid-1' },
      { session: 'c', client: 'app', user: 7, sid: 'sid-2' },
      { session: 'd', client: 'svc', user: null, sid: null },
    ];
    const signals = signalsOf(
      boxEvent({ event: 'session_closed', sessions: ['a', 'b', 'c', 'd'], how: 'sign-out', by: { user: '7' } }, { closed }),
    );
    expect(signals.map((s) => [s.type, s.user, s.sid])).to.deep.equal([
      [SESSION_REVOKED, 7, 'sid-1'],
      [SESSION_REVOKED, 7, 'sid-2'],
    ]);
    expect(signals[0]!.claims).to.deep.include({ initiating_entity: 'user' });
  });

  it('says a replayed refresh token was the policy’s doing, an API close an administrator’s', function () {
    const closed = [{ session: 'a', client: 'app', user: 7, sid: null }];
    const reuse = signalsOf(boxEvent({ event: 'session_closed', sessions: ['a'], how: 'refresh-token-reuse', by: {} }, { closed }));
    expect(reuse[0]!.claims.initiating_entity).to.equal('policy');
    const api = signalsOf(boxEvent({ event: 'session_closed', sessions: ['a'], how: 'api', by: { client: 'root' } }, { closed }));
    expect(api[0]!.claims.initiating_entity).to.equal('admin');
  });

  it('makes credential-change of a password written, by the person or an administrator', function () {
    const own = signalsOf(
      boxEvent({
        event: 'record_changed',
        kind: 'User',
        id: '7',
        action: 'changed',
        by: { user: '7' },
        changes: { password: { from: '(changed)', to: '(changed)' } },
      }),
    );
    expect(own).to.deep.equal([
      {
        type: CREDENTIAL_CHANGE,
        user: 7,
        sid: null,
        claims: { credential_type: 'password', change_type: 'update', initiating_entity: 'user' },
      },
    ]);
    const admin = signalsOf(
      boxEvent({ event: 'record_changed', kind: 'User', id: '7', action: 'changed', by: { client: 'root' }, changes: { password: {} } }),
    );
    expect(admin[0]!.claims.initiating_entity).to.equal('admin');
    expect(
      signalsOf(boxEvent({ event: 'record_changed', kind: 'User', id: '7', action: 'changed', by: {}, changes: { data: {} } })),
    ).to.deep.equal([]);
  });

  it('makes credential-change of second factors, and RISC account events', function () {
    const passkey = signalsOf(boxEvent({ event: 'factor', action: 'enrolled', user: '7', kind: 'passkey', by: { user: '7' } }));
    expect(passkey[0]!.claims).to.deep.include({ credential_type: 'fido2-platform', change_type: 'create' });
    const totp = signalsOf(boxEvent({ event: 'factor', action: 'removed', user: '7', kind: 'totp', by: { user: '7' } }));
    expect(totp[0]!.claims).to.deep.include({ credential_type: 'app', change_type: 'delete' });
    const email = signalsOf(boxEvent({ event: 'factor', action: 'enrolled', user: '7', kind: 'email', by: { user: '7' } }));
    expect(email[0]!.claims).to.deep.include({ credential_type: 'email-code', change_type: 'create' });
    expect(signalsOf(boxEvent({ event: 'account', action: 'deactivated', user: '7', by: {} }))[0]!.type).to.equal(ACCOUNT_DISABLED);
    expect(signalsOf(boxEvent({ event: 'record_changed', kind: 'User', id: '7', action: 'deleted', by: {} }))[0]!.type).to.equal(
      ACCOUNT_PURGED,
    );
    expect(signalsOf(boxEvent({ event: 'sign_in', outcome: 'success', user: '7', address: '127.0.0.1' }))).to.deep.equal([]);
  });
});

describe('ssf: assurance-level-change of a session strengthened (api/ssf/events.ts)', function () {
  const strengthened = (from: [string, string[]], to: [string, string[]], action: 'factor-given' | 'factor-enrolled' = 'factor-given') =>
    boxEvent({
      event: 'session_strengthened',
      action,
      user: '7',
      sid: 'sid-1',
      from: { acr: from[0], amr: from[1] },
      to: { acr: to[0], amr: to[1] },
      by: { user: '7' },
    });

  it('says the class before and after in the box’s acr namespace, about the browser session', function () {
    const [signal, ...more] = signalsOf(
      strengthened(['urn:boxauth:acr:password', ['pwd']], ['urn:boxauth:acr:mfa', ['pwd', 'otp', 'mfa']]),
    );
    expect(more).to.deep.equal([]);
    expect(signal).to.deep.include({ type: ASSURANCE_LEVEL_CHANGE, user: 7, sid: 'sid-1' });
    expect(signal!.claims).to.deep.equal({
      namespace: ACR_NAMESPACE,
      current_level: 'urn:boxauth:acr:mfa',
      previous_level: 'urn:boxauth:acr:password',
      change_direction: 'increase',
      initiating_entity: 'user',
      reason_admin: { en: 'The person gave a further factor in this session.' },
    });
    const enrolled = signalsOf(
      strengthened(['urn:boxauth:acr:mfa', ['pwd', 'otp', 'mfa']], ['phr', ['pwd', 'otp', 'hwk', 'mfa']], 'factor-enrolled'),
    );
    expect(enrolled[0]!.claims).to.deep.include({
      current_level: 'phr',
      previous_level: 'urn:boxauth:acr:mfa',
      change_direction: 'increase',
    });
  });

  it('makes none when the class did not change (a proof renewed, a factor added to a passkey sign-in)', function () {
    expect(signalsOf(strengthened(['phr', ['pwd', 'hwk', 'mfa']], ['phr', ['pwd', 'otp', 'hwk', 'mfa']]))).to.deep.equal([]);
    expect(
      signalsOf(strengthened(['urn:boxauth:acr:mfa', ['pwd', 'otp', 'mfa']], ['urn:boxauth:acr:mfa', ['pwd', 'otp', 'mfa']])),
    ).to.deep.equal([]);
  });

  it('would say decrease of a class that fell', function () {
    const fell = signalsOf(strengthened(['phr', ['hwk']], ['urn:boxauth:acr:password', ['pwd']]));
    expect(fell[0]!.claims.change_direction).to.equal('decrease');
  });
});

describe('ssf: a stream’s configuration (api/ssf/streams.ts)', function () {
  const refused = (f: () => unknown): string => {
    try {
      f();
    } catch (err) {
      expect(err).to.be.instanceOf(ApiError);
      expect((err as ApiError).status).to.equal(400);
      return (err as ApiError).message;
    }
    throw new Error('not refused');
  };

  it('takes a push stream, ignoring what the transmitter supplies', function () {
    const body = streamRequest({
      stream_id: 'x',
      iss: 'y',
      events_requested: [SESSION_REVOKED],
      delivery: { method: PUSH, endpoint_url: 'https://r.example/ssf', authorization_header: 'Bearer t' },
    });
    expect(wholeConfiguration(body)).to.deep.equal({
      description: null,
      eventsRequested: [SESSION_REVOKED],
      deliveryMethod: PUSH,
      endpointUrl: 'https://r.example/ssf',
      authorizationHeader: 'Bearer t',
    });
  });

  it('refuses what it cannot act on, saying what to fix', function () {
    expect(refused(() => streamRequest([]))).to.match(/JSON object/);
    expect(refused(() => streamRequest({ colour: 'blue' }))).to.match(/colour/);
    expect(refused(() => wholeConfiguration({ delivery: { method: PUSH } }))).to.match(/endpoint_url/);
    expect(refused(() => wholeConfiguration({ delivery: { method: PUSH, endpoint_url: 'https://u:p@r.example/' } }))).to.match(
      /credentials/,
    );
    expect(
      refused(() => wholeConfiguration({ delivery: { method: PUSH, endpoint_url: 'https://r.example/', authorization_header: 'a\r\nb' } })),
    ).to.match(/one line/);
  });

  it('keeps what a PATCH does not name; delivers the supported part of what was asked', function () {
    const stream = {
      description: 'd',
      eventsRequested: [SESSION_REVOKED],
      deliveryMethod: POLL,
      endpointUrl: null,
      authorizationHeader: null,
    } as const;
    expect(patchedConfiguration({ description: 'e' }, { ...stream, eventsRequested: [...stream.eventsRequested] })).to.deep.include({
      description: 'e',
      eventsRequested: [SESSION_REVOKED],
      deliveryMethod: POLL,
    });
    expect(eventsDelivered(['urn:unknown', CREDENTIAL_CHANGE])).to.deep.equal([CREDENTIAL_CHANGE]);
  });
});

describe('ssf: subjects (api/ssf/subjects.ts) and metadata', function () {
  it('reads the person a subject names, in the four formats', function () {
    expect(personNamed(ISSUER, { format: 'email', email: 'a@example.com' })).to.deep.equal({ email: 'a@example.com' });
    expect(personNamed(ISSUER, { format: 'iss_sub', iss: ISSUER, sub: '7' })).to.deep.equal({ sub: '7' });
    expect(personNamed(ISSUER, { format: 'iss_sub', iss: 'https://other.example', sub: '7' })).to.equal(undefined);
    expect(personNamed(ISSUER, { format: 'opaque', id: '7' })).to.deep.equal({ sub: '7' });
    expect(personNamed(ISSUER, { format: 'complex', user: { format: 'email', email: 'a@example.com' } })).to.deep.equal({
      email: 'a@example.com',
    });
    expect(personNamed(ISSUER, { format: 'phone_number', phone_number: '+1' })).to.match(/not one the box takes/);
    expect(personNamed(ISSUER, { format: 'complex', user: { format: 'complex', user: {} } })).to.match(/nest/);
  });

  it('names a session in a complex subject', function () {
    expect(personSubject(ISSUER, '7', null)).to.deep.equal({ format: 'iss_sub', iss: ISSUER, sub: '7' });
    expect(personSubject(ISSUER, '7', 's1')).to.deep.equal({
      format: 'complex',
      user: { format: 'iss_sub', iss: ISSUER, sub: '7' },
      session: { format: 'opaque', id: 's1' },
    });
  });

  it('has no empty array in the metadata (the suite refuses one)', function () {
    const empty = Object.entries(transmitterMetadata(ISSUER)).filter(([, v]) => Array.isArray(v) && !v.length);
    expect(empty).to.deep.equal([]);
  });
});
