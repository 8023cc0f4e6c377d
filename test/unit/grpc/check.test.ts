// Envoy's CheckRequest read into the request the decision is about: what it must name.
import { expect } from 'chai';
import type { Decision } from '../../../api/decision/engine.js';
import { NOBODY } from '../../../api/decision/request.js';
import { checkResponseOf, gateRequestOf } from '../../../api/grpc/check.js';

describe("Envoy's CheckRequest", function () {
  it('names no method: refused, not decided as a GET', function () {
    const read = (method: string | undefined, headers: Record<string, string> = {}) =>
      gateRequestOf(
        {
          attributes: { request: { http: { ...(method !== undefined ? { method } : {}), path: '/orders/1', host: 'a.example', headers } } },
        },
        65536,
      );
    expect(read(undefined)).to.deep.equal({ refused: 'the CheckRequest names no method (attributes.request.http.method)' });
    expect(read('')).to.have.property('refused');
    expect(read('delete')).to.include({ method: 'DELETE' });
    expect(read('', { ':method': 'POST' })).to.include({ method: 'POST' });
  });

  it("reads the peer's certificate from attributes.source.certificate only; an unreadable one is refused, naming the field", function () {
    const read = (source?: { certificate: string }) =>
      gateRequestOf(
        {
          attributes: {
            request: { http: { method: 'GET', path: '/', host: 'a.example', headers: { 'x-forwarded-client-cert': 'Cert=whatever' } } },
            ...(source ? { source } : {}),
          },
        },
        65536,
      );
    expect(read()).to.include({ certificate: undefined });
    expect(read({ certificate: '' })).to.include({ certificate: undefined });
    expect(read({ certificate: encodeURIComponent('-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n') })).to.deep.equal(
      {
        refused: 'attributes.source.certificate does not hold a client certificate: a PEM block is not an X.509 certificate',
      },
    );
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

describe('checkResponseOf: a decision as Envoy applies it', function () {
  const decision = (change: Partial<Decision>): Decision => ({
    id: 'd3',
    app: 'orders',
    door: 'grpc',
    allowed: false,
    status: 403,
    reason: 'no-policy',
    description: 'no policy of "orders" allows it',
    upstream: {},
    outcomes: [],
    request: null,
    caller: NOBODY,
    ...change,
  });
  const headersOf = (list: { header: { key: string; value: string } }[] | undefined): [string, string][] =>
    (list ?? []).map((h) => [h.header.key, h.header.value]);

  it('allowed: OK, the caller headers set, an empty one removed, and a look-alike of either removed', function () {
    const res = checkResponseOf(
      'default',
      decision({ allowed: true, status: 200, reason: 'allowed', upstream: { 'X-Auth-Request-User': '7', 'X-Auth-Request-Email': '' } }),
      false,
      ['x_auth_request_user', 'x.auth.request.email', 'x-auth-request-user', 'accept', 'x-auth-request-groups'],
    );
    expect(res.status).to.deep.equal({ code: 0 });
    expect(res).to.not.have.property('denied_response');
    expect(headersOf(res.ok_response!.headers)).to.deep.equal([
      ['X-Boxauth-Decision', 'd3'],
      ['X-Auth-Request-User', '7'],
    ]);
    expect(res.ok_response!.headers_to_remove).to.deep.equal(['x-auth-request-email', 'x_auth_request_user', 'x.auth.request.email']);
    expect(headersOf(res.ok_response!.response_headers_to_add)).to.deep.equal([['X-Boxauth-Decision', 'd3']]);
  });

  it('allowed with a stale sign-in cookie: the client is told to drop it', function () {
    const res = checkResponseOf(
      'default',
      decision({ allowed: true, status: 200, reason: 'allowed', clearCookie: '__Host-boxauth-app' }),
      false,
    );
    expect(headersOf(res.ok_response!.response_headers_to_add)).to.deep.equal([
      ['X-Boxauth-Decision', 'd3'],
      ['Set-Cookie', '__Host-boxauth-app=; Path=/; HttpOnly; SameSite=Lax; Secure; Max-Age=0'],
    ]);
  });

  it('refused: PERMISSION_DENIED, 403 with an RFC 6749-style error naming the decision, never stored', function () {
    const res = checkResponseOf('default', decision({}), false);
    expect(res.status).to.deep.equal({ code: 7, message: 'no policy of "orders" allows it' });
    expect(res.denied_response!.status.code).to.equal(403);
    expect(headersOf(res.denied_response!.headers)).to.deep.equal([
      ['X-Boxauth-Decision', 'd3'],
      ['Cache-Control', 'no-store'],
      ['Content-Type', 'application/json'],
    ]);
    expect(JSON.parse(res.denied_response!.body)).to.deep.equal({
      error: 'access_denied',
      error_description: "no policy of 'orders' allows it",
      decision: 'd3',
    });
  });

  it('to sign in: UNAUTHENTICATED, 302 to the sign-in address, a page for a browser', function () {
    const res = checkResponseOf(
      'default',
      decision({ status: 302, reason: 'sign-in', description: 'sign in first', location: 'https://box.example/sign-in?rd=x' }),
      true,
    );
    expect(res.status.code).to.equal(16);
    expect(res.denied_response!.status.code).to.equal(302);
    const headers = new Map(headersOf(res.denied_response!.headers));
    expect(headers.get('Location')).to.equal('https://box.example/sign-in?rd=x');
    expect(headers.get('X-Boxauth-Sign-In')).to.equal('https://box.example/sign-in?rd=x');
    expect(headers.get('Content-Type')).to.equal('text/html; charset=utf-8');
    expect(res.denied_response!.body).to.include('Reference: d3.');
  });
});
