// The XML libraries of SAML: @xmldom/xmldom (with xpath), xml-crypto and xml-encryption, some
// 4 MB of a process's heap and 10 MB of its memory. Required at the first SAML document,
// signature or encryption, never at the start: a box that serves no SAML app and signs no one in
// through a SAML provider never loads them (test/integration/idle-modules.test.ts). They are
// CommonJS, so the first use requires them synchronously, once, from the one copy in node_modules.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

type Xmldom = typeof import('@xmldom/xmldom');
type XmlCrypto = typeof import('xml-crypto');
type XmlEncryption = (typeof import('xml-encryption'))['default'];

let xmldom: Xmldom | undefined;
let xmlCrypto: XmlCrypto | undefined;
let xmlEncryption: XmlEncryption | undefined;

export const xmldomLibrary = (): Xmldom => (xmldom ??= require('@xmldom/xmldom') as Xmldom);
export const xmlCryptoLibrary = (): XmlCrypto => (xmlCrypto ??= require('xml-crypto') as XmlCrypto);
export const xmlEncryptionLibrary = (): XmlEncryption => (xmlEncryption ??= require('xml-encryption') as XmlEncryption);
