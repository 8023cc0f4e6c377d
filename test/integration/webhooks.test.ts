// Webhooks on real parts: a box, and a node:http receiver that verifies each delivery with the
// standardwebhooks library (Webhook.verify) and reads the CloudEvent. A person turned off by the
// REST API and by SCIM, a session closed, a resource changed: each one delivery of its type, to
// the Webhooks that subscribe to it only. A tampered body fails verification; the signing secret
// is in no log line, no audit event, no GET answer; a URL the box would not send to is refused
// when written.
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { Webhook as Verifier, WebhookVerificationError } from 'standardwebhooks';
import { Box, basic, boxForSuite, eventually, sleep } from '../support/box.js';
import { patch, provisioner, restIdOf, USER } from '../support/scim.js';

interface Delivery {
  path: string;
  headers: Record<string, string>;
  body: string;
}

/** A receiver of webhooks: every POST it gets, answered 204 (or what `answers` says for its path). */
class Receiver {
  readonly got: Delivery[] = [];
  readonly answers = new Map<string, number>();
  private readonly server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      this.got.push({ path: req.url ?? '', headers: req.headers as Record<string, string>, body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(this.answers.get(req.url ?? '') ?? 204).end();
    });
  });

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  /** The CloudEvents delivered at `path`, each verified with `secret`. */
  events(path: string, secret: string): any[] {
    return this.got.filter((d) => d.path === path).map((d) => new Verifier(secret).verify(d.body, d.headers));
  }
}

const newSecret = (): string => `whsec_${randomBytes(32).toString('base64')}`;

describe('webhooks: CloudEvents signed per Standard Webhooks', function () {
  this.timeout(90_000);
  let box: Box;
  let root: string;
  const receiver = new Receiver();
  let base = '';
  // The receiver is at 127.0.0.1: the box's settings allow it, as an administrator would a cluster's own range.
  boxForSuite((b, r) => ([box, root] = [b, r]), { env: { BOXAUTH_NOTICE_ALLOWED_ADDRESSES: '127.0.0.1/32' } });
  before(async function () {
    base = await receiver.start();
  });
  after(async function () {
    await receiver.stop();
  });

  const people = newSecret();
  const resources = newSecret();
  const sessions = newSecret();

  before(async function () {
    const put = async (id: string, body: Record<string, unknown>): Promise<void> => {
      const res = await box.json('PUT', `/Webhook/${id}`, body, root);
      expect(res.status, res.text).to.equal(201);
    };
    await put('people', {
      url: `${base}/people`,
      events: ['io.boxauth.account.deactivated', 'io.boxauth.account.activated'],
      secret: people,
    });
    await put('resources', { url: `${base}/resources`, events: ['io.boxauth.resource.created'], secret: resources });
    await put('sessions', { url: `${base}/sessions`, events: ['io.boxauth.session.closed'], secret: sessions });
  });

  const cloudEventOf = (event: any, type: string): void => {
    expect(event).to.include({ specversion: '1.0', source: box.url, type, datacontenttype: 'application/json' });
    expect(event.id).to.match(/^notice_\d+$/);
    expect(new Date(event.time).getTime()).to.be.closeTo(Date.now(), 60_000);
  };

  it('sends a person turned off through the REST API once, as io.boxauth.account.deactivated, signed', async function () {
    const user = (await box.json('POST', '/users', { email: 'rest-off@example.com', password: 'rest-off-password-1' }, root)).body;
    expect((await box.json('PUT', `/users/${user.id}`, { active: false }, root)).status).to.equal(200);
    const [event] = await eventually('the deactivation delivered', async () => {
      const found = receiver.events('/people', people).filter((e) => e.subject === String(user.id));
      return found.length ? found : undefined;
    });
    cloudEventOf(event, 'io.boxauth.account.deactivated');
    expect(event.data).to.include({ event: 'account', action: 'deactivated', user: String(user.id) });
    await sleep(1500); // no second delivery comes
    expect(receiver.events('/people', people).filter((e) => e.subject === String(user.id))).to.have.length(1);
  });

  it('sends a person turned off by SCIM once, and turned on again once', async function () {
    const scim = await provisioner(box, 'directory', { 'Content-Type': 'application/scim+json' });
    const made = await scim('POST', '/Users', { schemas: [USER], userName: 'scim-off@example.com', password: 'scim-off-password-1' });
    expect(made.status, made.text).to.equal(201);
    const scimId = String(JSON.parse(made.text).id);
    expect((await scim('PATCH', `/Users/${scimId}`, patch({ op: 'replace', path: 'active', value: false }))).status).to.equal(200);
    expect((await scim('PATCH', `/Users/${scimId}`, patch({ op: 'replace', path: 'active', value: true }))).status).to.equal(200);
    // A notice names the person by the box's own id (their row id), as the REST API does.
    const id = String(await restIdOf(box, root, 'scim-off@example.com'));
    const events = await eventually('both delivered', async () => {
      const found = receiver.events('/people', people).filter((e) => e.subject === id);
      return found.length >= 2 ? found : undefined;
    });
    expect(events.map((e) => e.type)).to.deep.equal(['io.boxauth.account.deactivated', 'io.boxauth.account.activated']);
    await sleep(1500);
    expect(receiver.events('/people', people).filter((e) => e.subject === id)).to.have.length(2);
  });

  it('sends a session closed once, with the sessions it ended', async function () {
    const { secret } = await box.addClient('closer', {}, { policy: false });
    const granted = await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('closer', secret) });
    expect(granted.status, granted.text).to.equal(200);
    const revoked = await box.form('/auth/revoke', { token: granted.body.access_token }, { Authorization: basic('closer', secret) });
    expect(revoked.status).to.equal(200);
    const [event] = await eventually('the close delivered', async () => {
      const found = receiver.events('/sessions', sessions).filter((e) => e.data.closed?.some((s: any) => s.client === 'closer'));
      return found.length ? found : undefined;
    });
    cloudEventOf(event, 'io.boxauth.session.closed');
    expect(event.data).to.include({ event: 'session_closed', how: 'revoke' });
    await sleep(1500);
    expect(receiver.events('/sessions', sessions).filter((e) => e.data.closed?.some((s: any) => s.client === 'closer'))).to.have.length(1);
  });

  it('sends a resource created once, to the Webhook that subscribes to it and no other', async function () {
    const res = await box.json('PUT', '/App/hooked', { urls: ['https://hooked.example'] }, root);
    expect(res.status, res.text).to.equal(201);
    const [event] = await eventually('the App delivered', async () => {
      const found = receiver.events('/resources', resources).filter((e) => e.subject === 'App/hooked');
      return found.length ? found : undefined;
    });
    cloudEventOf(event, 'io.boxauth.resource.created');
    expect(event.data).to.include({ event: 'record_changed', kind: 'App', id: 'hooked', action: 'created' });
    await sleep(1500);
    expect(receiver.events('/resources', resources).filter((e) => e.subject === 'App/hooked')).to.have.length(1);
    // The others subscribe to other types: none of their deliveries is about it.
    for (const [path, secret] of [
      ['/people', people],
      ['/sessions', sessions],
    ] as const) {
      expect(receiver.events(path, secret).filter((e) => e.subject === 'App/hooked')).to.deep.equal([]);
    }
    expect(receiver.events('/people', people).every((e) => e.type.startsWith('io.boxauth.account.'))).to.equal(true);
  });

  it('signs so that a tampered body, or another secret, fails verification', async function () {
    const delivery = await eventually('a delivery', async () => receiver.got.find((d) => d.path === '/resources'));
    expect(delivery.headers['content-type']).to.match(/^application\/cloudevents\+json/);
    expect(delivery.headers['webhook-id']).to.equal(JSON.parse(delivery.body).id);
    const tampered = delivery.body.replace('"created"', '"deleted"');
    expect(tampered).not.to.equal(delivery.body);
    expect(() => new Verifier(resources).verify(tampered, delivery.headers)).to.throw(WebhookVerificationError);
    expect(() => new Verifier(people).verify(delivery.body, delivery.headers)).to.throw(WebhookVerificationError);
  });

  it('never shows the signing secret: not in a GET answer, an audit event or a log line', async function () {
    const secret = newSecret();
    const url = `${base}/quiet`;
    expect((await box.json('PUT', '/Webhook/quiet', { url, events: ['io.boxauth.user.created'], secret }, root)).status).to.equal(201);
    expect(
      (await box.json('PUT', '/Webhook/quiet', { url, events: ['io.boxauth.user.created'], secret: newSecret() }, root)).status,
    ).to.equal(200);
    const got = await box.json('GET', '/Webhook/quiet', undefined, root);
    expect(got.status).to.equal(200);
    expect(got.body).to.deep.include({ resourceType: 'Webhook', id: 'quiet', url });
    expect(got.body).not.to.have.property('secret');
    const listed = await box.json('GET', '/Webhook', undefined, root);
    expect(listed.text).not.to.include('whsec_');
    const audit = await box.json('GET', '/AuditEvent?resource_type=Webhook&resource_id=quiet', undefined, root);
    const changes = (audit.body.entry as any[]).map((e) => e.resource.detail.changes);
    expect(changes.map((c) => c.secret)).to.deep.equal([{ to: '(changed)' }, { to: '(changed)' }]);
    expect(audit.text).not.to.include('whsec_');
    for (const s of [secret, people, resources, sessions]) {
      const key = s.slice('whsec_'.length);
      expect(box.logs.filter((line) => line.includes(key) || line.includes('whsec_'))).to.deep.equal([]);
    }
  });

  it('refuses when written a URL no box would send to, and a secret that is no Standard Webhooks secret', async function () {
    const put = (url: string, secret = newSecret()): Promise<any> =>
      box.json('PUT', '/Webhook/refused', { url, events: ['io.boxauth.session.closed'], secret }, root);
    for (const url of [
      `${box.url}/hook`,
      'ftp://example.com/hook',
      'https://example.com/hook#here',
      'https://u:p@example.com/hook',
      'not a url',
    ]) {
      const res = await put(url);
      expect(res.status, url).to.equal(422);
      expect(res.body.errors.url, url).to.have.length(1);
    }
    // Addresses are judged at each send, against the allow-list then (notices.test.ts: never posts
    // to an address the box does not allow): a record applied before its receiver exists is written.
    for (const url of ['https://10.0.0.8/hook', 'http://169.254.169.254/latest/meta-data']) {
      const res = await box.json(
        'PUT',
        '/Webhook/judged-at-send',
        { url, events: ['io.boxauth.session.closed'], secret: newSecret() },
        root,
      );
      expect(res.status, url).to.be.oneOf([200, 201]);
    }
    expect((await box.json('DELETE', '/Webhook/judged-at-send', undefined, root)).status).to.be.oneOf([200, 204]);
    const weak = await put(`${base}/refused`, 'whsec_c2hvcnQ=');
    expect(weak.status).to.equal(422);
    expect(weak.body.errors.secret[0]).not.to.include('c2hvcnQ');
    const none = await box.json('PUT', '/Webhook/refused', { url: `${base}/refused`, events: ['io.boxauth.session.closed'] }, root);
    expect(none.status).to.equal(422);
    expect(none.body.errors).to.have.property('secret');
    expect((await box.json('GET', '/Webhook/refused', undefined, root)).status).to.equal(404);
  });

  it('gives up the notices of a Webhook deleted, and one whose receiver answers 410 Gone', async function () {
    const gone = newSecret();
    expect(
      (await box.json('PUT', '/Webhook/gone', { url: `${base}/gone`, events: ['io.boxauth.user.created'], secret: gone }, root)).status,
    ).to.equal(201);
    receiver.answers.set('/gone', 410);
    {
      await box.json('POST', '/users', { email: 'gone-1@example.com', password: 'gone-password-1' }, root);
      await eventually('the 410 answered', async () => receiver.got.some((d) => d.path === '/gone'));
      const givenUp = await eventually('the give-up in the trail', async () => {
        const res = await box.json('GET', '/AuditEvent?event=notice', undefined, root);
        return (res.body.entry as any[]).map((e) => e.resource.detail).find((d) => d.kind === 'webhook' && d.destination === 'gone');
      });
      expect(JSON.stringify(givenUp)).not.to.include('gone-1@example.com');
    }
    // Gone: no notice is made for it until it is changed.
    const before = receiver.got.filter((d) => d.path === '/gone').length;
    await box.json('POST', '/users', { email: 'gone-2@example.com', password: 'gone-password-2' }, root);
    await sleep(1500);
    expect(receiver.got.filter((d) => d.path === '/gone')).to.have.length(before);
  });

  it('gives up the waiting notices of a Webhook deleted', async function () {
    const secret = newSecret();
    receiver.answers.set('/deleted', 503); // down: its notice waits, retried
    expect(
      (await box.json('PUT', '/Webhook/deleted', { url: `${base}/deleted`, events: ['io.boxauth.user.created'], secret }, root)).status,
    ).to.equal(201);
    await box.json('POST', '/users', { email: 'deleted-1@example.com', password: 'deleted-password-1' }, root);
    await eventually('a first attempt', async () => receiver.got.some((d) => d.path === '/deleted'));
    expect((await box.json('DELETE', '/Webhook/deleted', undefined, root)).status).to.equal(200);
    receiver.answers.delete('/deleted');
    await eventually('the give-up in the trail', async () => {
      const res = await box.json('GET', '/AuditEvent?event=notice', undefined, root);
      return (res.body.entry as any[]).some((e) => e.resource.detail.kind === 'webhook' && e.resource.detail.destination === 'deleted');
    });
    const attempts = receiver.got.filter((d) => d.path === '/deleted').length;
    await sleep(1500);
    expect(receiver.got.filter((d) => d.path === '/deleted')).to.have.length(attempts);
    expect(
      receiver.got
        .filter((d) => d.path === '/deleted')
        .every((d) => d.headers['webhook-id'] === receiver.got.find((g) => g.path === '/deleted')!.headers['webhook-id']),
    ).to.equal(true);
  });
});
