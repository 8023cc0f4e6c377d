// The gateways' HTTP doors when answering fails: whatever throws on the way to the answer
// (writing it, recording the decision) refuses that request with 503 and is logged, and the
// server goes on answering the next ones. The doors' ordinary answers are in
// test/integration/gate.test.ts, against a real box.
import { expect } from 'chai';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { gateEndpoints, type GateEndpointServices } from '../../../api/http/gate-endpoints.js';
import { Router, SERVER_CLASSES, type Request, type Response } from '../../../api/http/router.js';

/** Just enough of a box for decide(): one app, open to anyone; `record` is the decision record's. */
function services(record: () => void, logged: string[]): GateEndpointServices {
  const svc = {
    config: { box: 'default', baseUrl: 'http://box.example' },
    apps: {
      byId: (id: string) =>
        id === 'unreachable'
          ? Promise.reject(Object.assign(new Error('connect ECONNREFUSED 10.1.2.3:5432'), { code: 'ECONNREFUSED' }))
          : Promise.resolve(id === 'open' ? { resourceType: 'App', id, urls: ['https://open.example'] } : undefined),
    },
    policies: { decideApp: () => Promise.resolve({ allowed: true, outcomes: [{ id: 'anyone', verdict: 'allows' }] }) },
    decisions: { record },
    metrics: { refusals: { inc: () => undefined } },
    clientCertificates: { forwarded: () => undefined }, // no client certificate forwarded
    log: { error: (_fields: unknown, message: string) => void logged.push(message), warn: () => undefined, info: () => undefined },
  };
  // A test double: decide() reaches only the members above for an anonymous request to a named app.
  return svc as unknown as GateEndpointServices;
}

describe("the gateways' HTTP doors when answering fails", function () {
  let server: http.Server<typeof Request, typeof Response>;
  let url: string;
  let failing = true;
  const logged: string[] = [];

  before(async function () {
    const record = (): void => {
      if (failing) throw new Error('the record could not be written');
    };
    const router = new Router().use(
      '/authz',
      gateEndpoints(services(record, logged), () => undefined),
    );
    server = http.createServer(SERVER_CLASSES, router.listener());
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async function () {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  const ask = (path: string) =>
    fetch(`${url}${path}`, { headers: { 'X-Forwarded-Method': 'GET', 'X-Forwarded-Uri': '/page', Host: 'open.example' } });

  it('a throw after the decision refuses that request with 503 temporarily_unavailable, logged; the next ones are answered', async function () {
    failing = true;
    for (const path of ['/authz/forward-auth/open', '/authz/http/open/page']) {
      const res = await ask(path);
      expect(res.status, path).to.equal(503);
      expect(((await res.json()) as { error: string }).error).to.equal('temporarily_unavailable');
    }
    expect(logged).to.include('answering a decision point request failed; it is refused');
    failing = false;
    const next = await ask('/authz/forward-auth/open');
    expect(next.status).to.equal(200);
    expect(next.headers.get('x-auth-request-user')).to.equal('');
  });

  it("a decision the database's outage stopped is 503 with Retry-After, naming nothing of the database", async function () {
    failing = false;
    for (const path of ['/authz/forward-auth/unreachable', '/authz/http/unreachable/page']) {
      const res = await ask(path);
      const text = await res.text();
      expect(res.status, path).to.equal(503);
      expect(res.headers.get('retry-after'), path).to.equal('5');
      expect((JSON.parse(text) as { error: string }).error).to.equal('temporarily_unavailable');
      expect(text, "the database address is the log's").not.to.match(/10\.1\.2\.3|ECONNREFUSED|5432/);
    }
  });
});
