// The part of xml-encryption 6.0.1 (no types of its own) that ./encryption.ts uses: its
// callback API as lib/xmlenc.js declares it.
declare module 'xml-encryption' {
  import type { KeyLike } from 'node:crypto';

  interface EncryptOptions {
    /** The recipient's RSA public key. */
    rsa_pub: KeyLike;
    /** The recipient's certificate (PEM), written into the EncryptedKey's KeyInfo. */
    pem: string;
    encryptionAlgorithm: string;
    keyEncryptionAlgorithm: string;
    keyEncryptionDigest?: 'sha1' | 'sha256' | 'sha512';
    disallowEncryptionWithInsecureAlgorithm?: boolean;
    warnInsecureAlgorithm?: boolean;
  }

  interface DecryptOptions {
    key: KeyLike;
    disallowDecryptionWithInsecureAlgorithm?: boolean;
    warnInsecureAlgorithm?: boolean;
  }

  const xmlenc: {
    encrypt(content: string, options: EncryptOptions, callback: (err: Error | null, result?: string) => void): void;
    decrypt(xml: string | Node, options: DecryptOptions, callback: (err: Error | null, result?: string) => void): void;
  };
  export default xmlenc;
}
