// Envoy's x-forwarded-client-cert as the box reads it (api/http/client-certificate.ts): one element,
// the one the proxy set. Under APPEND_FORWARD the client's own header comes first, and an open quote
// in it would swallow the proxy's element: such headers are refused, never picked from.
import { expect } from 'chai';
import { forwardedCertificate, XFCC } from '../../../api/http/client-certificate.js';

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
