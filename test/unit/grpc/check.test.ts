// Envoy's CheckRequest read into the request the decision is about: what it must name.
import { expect } from 'chai';
import { gateRequestOf } from '../../../api/grpc/check.js';

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
});
