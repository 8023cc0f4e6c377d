// Secrets the box must read back (a person's TOTP secret) are sealed at rest: AES-256-GCM
// under the box's factor key, which lives outside the database (BOXAUTH_FACTOR_KEY, or
// $BOXAUTH_DATA_DIR/factor-key on a laptop; a Secret the operator makes in a cluster). A
// copy of the database alone reads none of them. What a person uses once is hashed instead.
//
// A sealed value is: version byte 1, a 12-byte random IV, the ciphertext, the 16-byte tag.
// The additional data binds it to what it is for (`purpose`), so a value sealed for one
// column cannot be moved to another.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

const VERSION = 1;

export function seal(key: Buffer, purpose: string, plain: Buffer): Buffer {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(purpose));
  const body = Buffer.concat([cipher.update(plain), cipher.final()]);
  return Buffer.concat([Buffer.from([VERSION]), iv, body, cipher.getAuthTag()]);
}

/** The plain value, or an error when the value was not sealed by this key for this purpose. */
export function unseal(key: Buffer, purpose: string, sealed: Buffer): Buffer {
  if (sealed.length < 1 + 12 + 16 || sealed[0] !== VERSION) throw new Error('not a sealed value');
  const decipher = createDecipheriv('aes-256-gcm', key, sealed.subarray(1, 13));
  decipher.setAAD(Buffer.from(purpose));
  decipher.setAuthTag(sealed.subarray(sealed.length - 16));
  return Buffer.concat([decipher.update(sealed.subarray(13, sealed.length - 16)), decipher.final()]);
}
