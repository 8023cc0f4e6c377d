// A software WebAuthn authenticator for integration tests: it makes a P-256 passkey (attestation
// 'none') and signs assertions as a platform authenticator does (WebAuthn §6.1 authenticator
// data, §6.3.3 signatures), so the box's passkey endpoints are tried over HTTP without a browser.
// Chromium's virtual authenticator does the same in test/e2e/passkeys.test.ts.
import { createHash, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto';
import { isoCBOR } from '@simplewebauthn/server/helpers';

const sha256 = (data: Buffer | string): Buffer => createHash('sha256').update(data).digest();
const b64 = (data: Buffer): string => data.toString('base64url');

export interface AuthenticatorOptions {
  /** Synced between devices (the BE and BS flags): the box calls it `swk`. */
  synced?: boolean;
  /** Keeps a signature counter (else it is always 0, as synced passkeys send). */
  counter?: boolean;
}

export class SoftAuthenticator {
  readonly credentialId = randomBytes(16);
  private readonly key: { publicKey: KeyObject; privateKey: KeyObject } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  signCount = 0;
  /** The user handle the box gave when the passkey was made (base64url). */
  userHandle = '';

  constructor(
    readonly origin: string,
    private readonly options: AuthenticatorOptions = { counter: true },
  ) {}

  get id(): string {
    return b64(this.credentialId);
  }

  private authData(withCredential: boolean): Buffer {
    const rpIdHash = sha256(new URL(this.origin).hostname);
    // UP, UV, and BE+BS when synced; AT when a credential is attached.
    const flags = 0x01 | 0x04 | (this.options.synced ? 0x18 : 0) | (withCredential ? 0x40 : 0);
    if (this.options.counter) this.signCount++;
    const counter = Buffer.alloc(4);
    counter.writeUInt32BE(this.options.counter ? this.signCount : 0);
    if (!withCredential) return Buffer.concat([rpIdHash, Buffer.from([flags]), counter]);
    const jwk = this.key.publicKey.export({ format: 'jwk' });
    const cose = isoCBOR.encode(
      new Map<number, number | Uint8Array>([
        [1, 2],
        [3, -7],
        [-1, 1],
        [-2, Buffer.from(jwk.x!, 'base64url')],
        [-3, Buffer.from(jwk.y!, 'base64url')],
      ]),
    );
    const length = Buffer.alloc(2);
    length.writeUInt16BE(this.credentialId.length);
    return Buffer.concat([rpIdHash, Buffer.from([flags]), counter, Buffer.alloc(16), length, this.credentialId, Buffer.from(cose)]);
  }

  private clientData(type: 'webauthn.create' | 'webauthn.get', challenge: string, origin = this.origin): Buffer {
    return Buffer.from(JSON.stringify({ type, challenge, origin, crossOrigin: false }));
  }

  /** A registration response to the box's options (navigator.credentials.create's JSON). */
  register(options: { challenge: string; user: { id: string } }): Record<string, unknown> {
    this.userHandle = options.user.id;
    const attestationObject = isoCBOR.encode(
      new Map<string, string | Map<string, string> | Uint8Array>([
        ['fmt', 'none'],
        ['attStmt', new Map<string, string>()],
        ['authData', this.authData(true)],
      ]),
    );
    return {
      id: this.id,
      rawId: this.id,
      type: 'public-key',
      response: {
        clientDataJSON: b64(this.clientData('webauthn.create', options.challenge)),
        attestationObject: b64(Buffer.from(attestationObject)),
        transports: ['internal'],
      },
      clientExtensionResults: {},
      authenticatorAttachment: 'platform',
    };
  }

  /** An assertion for the box's options (navigator.credentials.get's JSON); `userHandle` overrides the one it holds. */
  assert(options: { challenge: string }, overrides: { userHandle?: string; origin?: string } = {}): Record<string, unknown> {
    const authenticatorData = this.authData(false);
    const clientDataJSON = this.clientData('webauthn.get', options.challenge, overrides.origin);
    const signature = sign('sha256', Buffer.concat([authenticatorData, sha256(clientDataJSON)]), this.key.privateKey);
    return {
      id: this.id,
      rawId: this.id,
      type: 'public-key',
      response: {
        clientDataJSON: b64(clientDataJSON),
        authenticatorData: b64(authenticatorData),
        signature: b64(signature),
        userHandle: overrides.userHandle ?? this.userHandle,
      },
      clientExtensionResults: {},
      authenticatorAttachment: 'platform',
    };
  }
}
