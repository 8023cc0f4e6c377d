// Sign-in on another device (RFC 8628), for a terminal with no browser at hand
// (ssh): the person opens the box's page anywhere, signs in and enters the code;
// this process polls the token endpoint at the pace the box asks for.
import { setTimeout as sleep } from 'node:timers/promises';
import { CliError } from '../api.js';
import { TokenRefused, type BoxClient, type SignedIn } from './box-client.js';

export interface DeviceSignIn {
  scope: string;
  timeoutMs: number;
  err: (text: string) => void;
}

/** RFC 8628 §3.5: slow_down adds five seconds to the interval, for good. */
const SLOW_DOWN_MS = 5000;

export async function signInWithDevice(box: BoxClient, opts: DeviceSignIn): Promise<SignedIn> {
  const asked = await box.startDevice(opts.scope);
  opts.err(
    `To sign in to ${box.issuer}, open\n\n    ${asked.verification_uri}\n\nand enter the code ${asked.user_code}` +
      (asked.verification_uri_complete ? ` (or open ${asked.verification_uri_complete})` : '') +
      '\n\n',
  );
  let interval = (asked.interval ?? 5) * 1000;
  const windowMs = Math.min(opts.timeoutMs, asked.expires_in * 1000);
  const deadline = Date.now() + windowMs;
  for (;;) {
    await sleep(interval);
    try {
      return await box.pollDevice(asked.device_code);
    } catch (err) {
      if (!(err instanceof TokenRefused)) throw err;
      switch (err.code) {
        case 'authorization_pending':
          break;
        case 'slow_down':
          interval += SLOW_DOWN_MS;
          break;
        case 'access_denied':
          throw new CliError('the sign-in was denied on the box', 1, { cause: err });
        case 'expired_token':
          throw new CliError('the code expired before it was entered; run the command again for a new one', 1, { cause: err });
        default:
          throw err;
      }
    }
    if (Date.now() + interval > deadline) {
      throw new CliError(`the code was not entered within ${Math.round(windowMs / 1000)} s; run the command again to retry`);
    }
  }
}
