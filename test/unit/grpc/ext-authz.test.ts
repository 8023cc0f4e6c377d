// Envoy's gRPC door when answering fails: a throw on the way to the CheckResponse is a
// refusal of that check (UNAVAILABLE, 503 to the client), logged, never a lost callback or
// an unhandled rejection.
import { expect } from 'chai';
import type { CheckResponse } from '../../../api/grpc/check.js';
import { checkHandler, type ExtAuthzServices } from '../../../api/grpc/ext-authz.js';

describe("Envoy's gRPC door when answering fails", function () {
  it('a throw after the decision answers UNAVAILABLE with a 503 denied response, and logs it', async function () {
    const logged: string[] = [];
    const svc = {
      config: { box: 'default', baseUrl: 'http://box.example' },
      apps: { byId: (id: string) => Promise.resolve({ resourceType: 'App', id, urls: ['https://open.example'] }) },
      policies: { decideApp: () => Promise.resolve({ allowed: true, outcomes: [{ id: 'anyone', verdict: 'allows' }] }) },
      decisions: {
        record: () => {
          throw new Error('the record could not be written');
        },
      },
      log: { error: (_fields: unknown, message: string) => void logged.push(message) },
    };
    // A test double: decide() reaches only the members above for an anonymous request to a named app.
    const handle = checkHandler(svc as unknown as ExtAuthzServices);
    const answer = await new Promise<CheckResponse>((resolve, reject) =>
      handle(
        {
          request: {
            attributes: { request: { http: { method: 'GET', path: '/page', host: 'open.example' } }, context_extensions: { app: 'open' } },
          },
        },
        (err, value) => (err ? reject(new Error(err.details ?? 'gRPC error')) : resolve(value!)),
      ),
    );
    expect(answer.status.code).to.equal(14); // UNAVAILABLE
    expect(answer.denied_response?.status.code).to.equal(503);
    expect(JSON.parse(answer.denied_response!.body)).to.include({ error: 'temporarily_unavailable' });
    expect(logged).to.include('a gRPC check could not be answered; it is refused');
  });
});
