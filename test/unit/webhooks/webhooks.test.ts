// The webhook kind's pure parts: the Standard Webhooks signature as the standardwebhooks library
// verifies it, the secret's form, the CloudEvents types of the audit's events, and the CloudEvent
// a notice is sent as.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { expect } from 'chai';
import { Webhook as Verifier, WebhookVerificationError } from 'standardwebhooks';
import { parse as parseYaml } from 'yaml';
import { projectPath } from '../../../api/paths.js';
import { WEBHOOK_EVENT_TYPES } from '../../../api/webhook-events.js';
import { eventSubject, eventType } from '../../../api/webhooks/event-types.js';
import { cloudEvent } from '../../../api/webhooks/kind.js';
import { secretProblem, signedHeaders } from '../../../api/webhooks/signing.js';

const secret = `whsec_${randomBytes(32).toString('base64')}`;
const by = { client: 'root' };

describe('webhooks: signing per Standard Webhooks', function () {
  it('signs so that the standardwebhooks library verifies the body, and refuses a tampered one', function () {
    const body = JSON.stringify({ specversion: '1.0', id: 'notice_7', type: 'io.boxauth.session.closed' });
    const headers = signedHeaders(secret, 'notice_7', body, new Date());
    expect(headers['webhook-id']).to.equal('notice_7');
    expect(headers['webhook-signature']).to.match(/^v1,[A-Za-z0-9+/]+=*$/);
    expect(new Verifier(secret).verify(body, headers)).to.deep.equal(JSON.parse(body));
    expect(() => new Verifier(secret).verify(body.replace('closed', 'opened'), headers)).to.throw(WebhookVerificationError);
    expect(() => new Verifier(`whsec_${randomBytes(32).toString('base64')}`).verify(body, headers)).to.throw(WebhookVerificationError);
  });

  it('takes only a whsec_ secret of 24 to 64 bytes, and never repeats it in its answer', function () {
    expect(secretProblem(secret)).to.equal(undefined);
    expect(secretProblem(`whsec_${randomBytes(24).toString('base64')}`)).to.equal(undefined);
    expect(secretProblem(`whsec_${randomBytes(64).toString('base64')}`)).to.equal(undefined);
    const short = `whsec_${randomBytes(16).toString('base64')}`;
    for (const bad of [
      short,
      `whsec_${randomBytes(65).toString('base64')}`,
      randomBytes(32).toString('base64'),
      'whsec_not base64!',
      'whsec_',
    ]) {
      const problem = secretProblem(bad);
      expect(problem, bad).to.be.a('string');
      expect(problem).not.to.include(bad.slice(6) || 'whsec_x');
    }
  });
});

describe('webhooks: the CloudEvents types of the audit events', function () {
  it('names each event io.boxauth.<what>.<action>, of [a-z_] words, and none of the token endpoint or allowed decisions', function () {
    expect(eventType({ event: 'session_closed', sessions: ['s'], how: 'api', by })).to.equal('io.boxauth.session.closed');
    const level = (acr: string, amr: string[]): { acr: string; amr: string[] } => ({ acr, amr });
    expect(
      eventType({
        event: 'session_strengthened',
        action: 'factor-given',
        user: '4',
        sid: 's',
        from: level('urn:boxauth:acr:password', ['pwd']),
        to: level('urn:boxauth:acr:mfa', ['pwd', 'otp', 'mfa']),
        by,
      }),
    ).to.equal('io.boxauth.session.strengthened');
    expect(eventType({ event: 'account', action: 'deactivated', user: '4', by })).to.equal('io.boxauth.account.deactivated');
    expect(eventType({ event: 'account', action: 'password-reset', user: '4', by })).to.equal('io.boxauth.account.password_reset');
    expect(eventType({ event: 'sign_in', outcome: 'success', user: '4', address: '::1' })).to.equal('io.boxauth.sign_in.succeeded');
    expect(eventType({ event: 'sign_in', outcome: 'failure', address: '::1' })).to.equal('io.boxauth.sign_in.failed');
    expect(eventType({ event: 'factor', action: 'recovery-code-used', user: '4', by })).to.equal('io.boxauth.factor.recovery_code_used');
    expect(eventType({ event: 'record_changed', kind: 'User', id: '4', action: 'changed', by })).to.equal('io.boxauth.user.changed');
    expect(eventType({ event: 'record_changed', kind: 'Client', id: 'c', action: 'deleted', by })).to.equal('io.boxauth.resource.deleted');
    expect(eventType({ event: 'token_issued', client: 'c', grant: 'g', session: 's' })).to.equal(undefined);
    const decision = { event: 'decision' as const, id: 'd', app: 'a', door: 'forward-auth', status: 403, reason: 'r', policies: [] };
    expect(eventType({ ...decision, allowed: true })).to.equal(undefined);
    expect(eventType({ ...decision, allowed: false })).to.equal('io.boxauth.decision.refused');
    for (const type of WEBHOOK_EVENT_TYPES) expect(type).to.match(/^io\.boxauth\.[a-z_]+\.[a-z_]+$/);
  });

  it('names the person as subject (their sub), or the record changed as <Kind>/<id>', function () {
    expect(eventSubject({ event: 'account', action: 'activated', user: '12', by })).to.equal('12');
    expect(eventSubject({ event: 'record_changed', kind: 'User', id: '12', action: 'changed', by })).to.equal('12');
    expect(eventSubject({ event: 'record_changed', kind: 'Webhook', id: 'ops', action: 'created', by })).to.equal('Webhook/ops');
  });

  it('offers in crds/webhook.yaml exactly the types it sends', function () {
    const crd = parseYaml(fs.readFileSync(projectPath('crds/webhook.yaml'), 'utf8')) as {
      spec: {
        versions: { schema: { openAPIV3Schema: { properties: { spec: { properties: { events: { items: { enum: string[] } } } } } } } }[];
      };
    };
    const offered = crd.spec.versions[0]!.schema.openAPIV3Schema.properties.spec.properties.events.items.enum;
    expect(offered, 'stale: run make generate').to.deep.equal([...WEBHOOK_EVENT_TYPES]);
  });
});

describe('webhooks: the CloudEvent of a notice', function () {
  it('is the same document at every attempt, its id derived from the notice, its source the box', function () {
    const notice = {
      id: '42',
      payload: { type: 'io.boxauth.session.closed', time: '2026-01-01T00:00:00.000Z', subject: '4', data: { how: 'api' } },
    };
    const event = cloudEvent(notice, 'https://box.example');
    expect(event).to.deep.equal({
      specversion: '1.0',
      id: 'notice_42',
      source: 'https://box.example',
      type: 'io.boxauth.session.closed',
      time: '2026-01-01T00:00:00.000Z',
      subject: '4',
      datacontenttype: 'application/json',
      data: { how: 'api' },
    });
    expect(cloudEvent(notice, 'https://box.example')).to.deep.equal(event);
  });
});
