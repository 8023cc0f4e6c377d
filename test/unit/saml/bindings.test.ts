// The SAML bindings' encodings, as a peer's message arrives: a Redirect message inflates to the
// XML sent, within a limit that a DEFLATE bomb reaches quickly; what is not base64, not raw
// DEFLATE or not UTF-8 is refused with a SamlRefusal, never guessed at.
import { deflateRawSync, deflateSync } from 'node:zlib';
import { expect } from 'chai';
import { decodePostMessage, decodeRedirectMessage, encodeRedirectMessage, SAML_MESSAGE_LIMIT_BYTES } from '../../../api/saml/bindings.js';
import { SamlRefusal } from '../../../api/saml/xml.js';
import { assertionXml, responseXml } from './signing-fixtures.js';

function refusal(decode: () => unknown): SamlRefusal {
  try {
    decode();
  } catch (err) {
    expect(err).to.be.instanceOf(SamlRefusal);
    return err as SamlRefusal;
  }
  throw new Error('it was not refused');
}

describe('the HTTP-Redirect encoding of a SAML message', function () {
  const xml = responseXml(assertionXml('_é'));

  it('round-trips through raw DEFLATE and base64, without a zlib header', function () {
    const encoded = encodeRedirectMessage(xml);
    expect(encoded).to.match(/^[A-Za-z0-9+/]+=*$/);
    expect(Buffer.from(encoded, 'base64').equals(deflateRawSync(Buffer.from(xml)))).to.equal(true);
    expect(decodeRedirectMessage(encoded)).to.equal(xml);
  });

  it('refuses a DEFLATE bomb (50 MB of zeros) at the limit, quickly', function () {
    const bomb = deflateRawSync(Buffer.alloc(50 * 1024 * 1024)).toString('base64');
    expect(bomb.length).to.be.below(SAML_MESSAGE_LIMIT_BYTES);
    const started = process.hrtime.bigint();
    expect(refusal(() => decodeRedirectMessage(bomb)).reason).to.equal(
      `the message inflates to more than ${SAML_MESSAGE_LIMIT_BYTES} bytes`,
    );
    expect(Number(process.hrtime.bigint() - started) / 1e6).to.be.below(1000);
  });

  it('takes a message of exactly the limit, and refuses one byte more', function () {
    const atLimit = `<x>${'a'.repeat(SAML_MESSAGE_LIMIT_BYTES - 7)}</x>`;
    expect(decodeRedirectMessage(encodeRedirectMessage(atLimit))).to.equal(atLimit);
    expect(refusal(() => decodeRedirectMessage(encodeRedirectMessage(`${atLimit} `))).reason).to.match(/inflates to more than/);
  });

  it('refuses what is not base64: other characters, missing padding, line breaks, nothing', function () {
    const encoded = encodeRedirectMessage(xml);
    for (const bad of ['%%%%', 'QUI', 'QU=I', 'QUI=QUI=', `${encoded.slice(0, 8)}\n${encoded.slice(8)}`, `${encoded} `, '']) {
      expect(refusal(() => decodeRedirectMessage(bad)).reason, JSON.stringify(bad.slice(0, 20))).to.equal('the message is not base64');
    }
  });

  it('refuses DEFLATE with a zlib header, and base64 that is not DEFLATE at all', function () {
    expect(refusal(() => decodeRedirectMessage(deflateSync(Buffer.from(xml)).toString('base64'))).reason).to.equal(
      'the message is not raw DEFLATE data',
    );
    expect(refusal(() => decodeRedirectMessage(Buffer.from(xml).toString('base64'))).reason).to.equal(
      'the message is not raw DEFLATE data',
    );
  });

  it('refuses a message that is not UTF-8', function () {
    expect(refusal(() => decodeRedirectMessage(deflateRawSync(Buffer.from([0x3c, 0xff, 0xfe, 0x3e])).toString('base64'))).reason).to.equal(
      'the message is not UTF-8',
    );
  });

  it('refuses an encoded message far longer than any message taken, before decoding it', function () {
    expect(refusal(() => decodeRedirectMessage('A'.repeat(2 * SAML_MESSAGE_LIMIT_BYTES))).reason).to.match(/longer than/);
  });
});

describe('the HTTP-POST encoding of a SAML message', function () {
  const xml = responseXml(assertionXml('_ü'));

  it('decodes base64, with or without MIME line breaks', function () {
    const b64 = Buffer.from(xml).toString('base64');
    expect(decodePostMessage(b64)).to.equal(xml);
    expect(decodePostMessage(b64.replace(/.{76}/g, '$&\r\n'))).to.equal(xml);
  });

  it('refuses what is not base64, and what is not UTF-8', function () {
    expect(refusal(() => decodePostMessage('<samlp:Response/>')).reason).to.equal('the message is not base64');
    expect(refusal(() => decodePostMessage('')).reason).to.equal('the message is not base64');
    expect(refusal(() => decodePostMessage(Buffer.from([0xc3, 0x28, 0x41]).toString('base64'))).reason).to.equal(
      'the message is not UTF-8',
    );
  });

  it('takes a message of exactly the limit, and refuses one byte more', function () {
    const atLimit = 'a'.repeat(SAML_MESSAGE_LIMIT_BYTES);
    expect(decodePostMessage(Buffer.from(atLimit).toString('base64'))).to.equal(atLimit);
    expect(refusal(() => decodePostMessage(Buffer.from(`${atLimit}a`).toString('base64'))).reason).to.match(/longer than/);
  });
});
