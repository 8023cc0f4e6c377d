// Envoy's gRPC door and DPoP: a CheckRequest's DPoP-bound token and proofs reach the
// decision, and a refusal's DPoP challenge and nonce reach the client.
import { expect } from 'chai';
import type { Decision } from '../../../api/decision/engine.js';
import { NOBODY } from '../../../api/decision/request.js';
import { checkResponseOf, gateRequestOf } from '../../../api/grpc/check.js';

const check = (headers: Record<string, string>) =>
  gateRequestOf(
    {
      attributes: { request: { http: { method: 'GET', path: '/q3?x=1', host: 'reports.example', scheme: 'https', headers } } },
    },
    65536,
  );

describe("Envoy's gRPC door with DPoP", function () {
  it('reads "DPoP <token>" and the proof; a repeated DPoP header (joined with commas) is several proofs', function () {
    const one = check({ authorization: 'DPoP tok', dpop: 'a.b.c' });
    expect(one).to.deep.include({ credential: { dpop: 'tok' }, proofs: ['a.b.c'] });
    expect(check({ authorization: 'DPoP tok', dpop: 'a.b.c,d.e.f' })).to.deep.include({ proofs: ['a.b.c', 'd.e.f'] });
    expect(check({ authorization: 'Bearer tok' })).to.deep.include({ credential: { bearer: 'tok' } });
    expect(check({ authorization: 'Bearer tok' })).to.not.have.property('proofs');
  });

  it("a refusal carries the DPoP challenge, the RFC's error and the nonce to use", function () {
    const d: Decision = {
      id: 'd1',
      app: 'reports',
      door: 'grpc',
      allowed: false,
      status: 401,
      reason: 'bad-token',
      description: 'the DPoP proof must carry the nonce of DPoP-Nonce',
      upstream: {},
      challenge: 'DPoP realm="reports", error="use_dpop_nonce"',
      error: 'use_dpop_nonce',
      dpopNonce: 'n1',
      outcomes: [],
      request: null,
      caller: NOBODY,
    };
    const res = checkResponseOf('default', d, false);
    const header = (name: string) => res.denied_response!.headers.find((h) => h.header.key === name)?.header.value;
    expect(header('WWW-Authenticate')).to.equal('DPoP realm="reports", error="use_dpop_nonce"');
    expect(header('DPoP-Nonce')).to.equal('n1');
    expect(JSON.parse(res.denied_response!.body).error).to.equal('use_dpop_nonce');
  });
});
