// Envoy's CheckRequest read into the request the decision is about: what it must name.
import { expect } from 'chai';
import type { Decision } from '../../../api/decision/engine.js';
import { NOBODY } from '../../../api/decision/request.js';
import { checkResponseOf, gateRequestOf } from '../../../api/grpc/check.js';

describe("Envoy's CheckRequest", function () {
  it('names no method: refused, not decided as a GET', function () {
    const read = (method: string | undefined, headers: Record<string, string> = {}) =>
      gateRequestOf({
        attributes: { request: { http: { ...(method !== undefined ? { method } : {}), path: '/orders/1', host: 'a.example', headers } } },
      });
    expect(read(undefined)).to.deep.equal({ refused: 'the CheckRequest names no method (attributes.request.http.method)' });
    expect(read('')).to.have.property('refused');
    expect(read('delete')).to.include({ method: 'DELETE' });
    expect(read('', { ':method': 'POST' })).to.include({ method: 'POST' });
  });

  it('a decision the database stopped is UNAVAILABLE, 503 with Retry-After for the client', function () {
    const d: Decision = {
      id: 'd2',
      app: null,
      door: 'grpc',
      allowed: false,
      status: 503,
      reason: 'error',
      description: 'the decision point cannot reach its database or it is overloaded right now; try again shortly',
      upstream: {},
      retryAfter: 5,
      outcomes: [],
      request: null,
      caller: NOBODY,
    };
    const res = checkResponseOf('default', d, false);
    expect(res.status.code).to.equal(14); // google.rpc.Code UNAVAILABLE
    expect(res.denied_response!.status.code).to.equal(503);
    expect(res.denied_response!.headers.find((h) => h.header.key === 'Retry-After')?.header.value).to.equal('5');
    expect(JSON.parse(res.denied_response!.body).error).to.equal('temporarily_unavailable');
  });
});
