// Envoy's x-forwarded-client-cert as the box reads it (api/http/client-certificate.ts): one element,
// the one the proxy set. Under APPEND_FORWARD the client's own header comes first, and an open quote
// in it would swallow the proxy's element: such headers are refused, never picked from.
import { expect } from 'chai';
import { X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import { forwardedCertificate, XFCC } from '../../../api/http/client-certificate.js';
import { testCa } from '../../support/tls.js';

const pem = (name: string): string => encodeURIComponent(`-----BEGIN CERTIFICATE-----\n${name}\n-----END CERTIFICATE-----\n`);

function refusal(value: string): string {
  try {
    forwardedCertificate(XFCC, value);
  } catch (err) {
    return (err as Error).message;
  }
  return 'accepted';
}

describe("Envoy's x-forwarded-client-cert", function () {
  it('refuses several elements (APPEND_FORWARD): the client may have written the first', function () {
    expect(refusal(`Cert="${pem('victim')}",By=spiffe://proxy;Hash=abc;Cert="${pem('presented')}"`)).to.match(/2 elements, not one/);
  });

  it("refuses a quote left open, which would swallow the proxy's element", function () {
    expect(refusal(`Cert="${pem('victim')}";X=",By=spiffe://proxy;Hash=abc;Cert=${pem('presented')}`)).to.match(
      /quoted value does not end/,
    );
  });
});

describe('a forwarded certificate as base64 DER (Traefik, Caddy)', function () {
  const der = (cert: X509Certificate): string => cert.raw.toString('base64');
  const ca = testCa();
  const leaf = new X509Certificate(fs.readFileSync(ca.issue('leaf').certFile));
  const issuer = new X509Certificate(ca.pem);

  it("reads Traefik's X-Forwarded-Tls-Client-Cert (URL-escaped, comma-separated) and Caddy's certificate_der_base64", function () {
    const traefik = forwardedCertificate('x-forwarded-tls-client-cert', encodeURIComponent(`${der(leaf)},${der(issuer)}`));
    expect(traefik.leaf.raw.equals(leaf.raw)).to.equal(true);
    expect(traefik.chain.map((c) => c.raw.equals(issuer.raw))).to.deep.equal([true]);
    expect(forwardedCertificate('x-client-cert', der(leaf)).leaf.raw.equals(leaf.raw)).to.equal(true);
  });

  it('refuses what is neither PEM nor base64 DER', function () {
    expect(() => forwardedCertificate('x-client-cert', 'not a certificate')).to.throw(/neither a PEM block nor base64 DER/);
    expect(() => forwardedCertificate('x-client-cert', 'QUJD')).to.throw(/base64 value is not an X.509 certificate/);
  });
});
