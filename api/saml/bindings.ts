// How a SAML message travels in a browser (SAML Bindings): HTTP-Redirect (§3.4: the XML, DEFLATE
// raw, base64, in a query parameter; its signature over the query: ./sign.ts, verified in
// ./verify.ts) and HTTP-POST (§3.5: base64 in a form field; the page that posts it is
// api/ui/form-post-page.ts's formPostPage, the one auto-submitting form of the box).
//
// What comes in is decoded within a limit before anything parses it: a DEFLATE stream of a few
// tens of kilobytes inflates to gigabytes, so inflation stops at the limit instead of finishing.
import { isUtf8 } from 'node:buffer';
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import { SamlRefusal } from './xml.js';

/** The largest decoded message taken, as api/saml/xml.ts's limit for a protocol message: no SAML message an SP or IdP sends comes near it. */
export const SAML_MESSAGE_LIMIT_BYTES = 256 * 1024;

/** Base64 of a little more than the limit: a message within it, deflated, is never much longer than itself (DEFLATE's stored blocks add 5 octets per 64 KiB). */
const ENCODED_LIMIT = Math.ceil((SAML_MESSAGE_LIMIT_BYTES + 1024) / 3) * 4;

/** The value of a SAMLRequest or SAMLResponse query parameter for `xml` (Bindings §3.4.4.1: DEFLATE without the zlib header, then base64), before URL-encoding. */
export function encodeRedirectMessage(xml: string): string {
  return deflateRawSync(Buffer.from(xml, 'utf8')).toString('base64');
}

/** The XML of a SAMLRequest or SAMLResponse query parameter, URL-decoded already; throws SamlRefusal. */
export function decodeRedirectMessage(b64: string): string {
  const deflated = base64Octets(b64, false);
  let xml: Buffer;
  try {
    xml = inflateRawSync(deflated, { maxOutputLength: SAML_MESSAGE_LIMIT_BYTES });
  } catch (err) {
    if ((err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') {
      throw new SamlRefusal(`the message inflates to more than ${SAML_MESSAGE_LIMIT_BYTES} bytes`);
    }
    throw new SamlRefusal('the message is not raw DEFLATE data');
  }
  return utf8(xml);
}

/** The XML of a SAMLRequest or SAMLResponse form field (Bindings §3.5.4: base64, not deflated); throws SamlRefusal. */
export function decodePostMessage(b64: string): string {
  // Some senders break their base64 into lines (MIME's 76 columns): the breaks carry nothing.
  const xml = base64Octets(b64, true);
  if (xml.length > SAML_MESSAGE_LIMIT_BYTES) throw tooLong();
  return utf8(xml);
}

/** The octets of canonical base64 (RFC 4648 §4, padded) of at most about the limit; line breaks taken only where said. */
function base64Octets(b64: string, lineBreaks: boolean): Buffer {
  // Twice the limit before line breaks are taken out: lines of 64 or 76 characters add one or two each.
  if (b64.length > (lineBreaks ? 2 : 1) * ENCODED_LIMIT) throw tooLong();
  const text = lineBreaks ? b64.replace(/[\r\n\t ]+/g, '') : b64;
  if (text.length > ENCODED_LIMIT) throw tooLong();
  if (text === '' || text.length % 4 !== 0 || !/^[A-Za-z0-9+/]+={0,2}$/.test(text)) throw new SamlRefusal('the message is not base64');
  return Buffer.from(text, 'base64');
}

function tooLong(): SamlRefusal {
  return new SamlRefusal(`the message is longer than ${SAML_MESSAGE_LIMIT_BYTES} bytes`);
}

function utf8(octets: Buffer): string {
  if (!isUtf8(octets)) throw new SamlRefusal('the message is not UTF-8');
  return octets.toString('utf8');
}
