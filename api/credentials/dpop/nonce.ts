// Server-provided DPoP nonces (RFC 9449 §8, §9), without state: a nonce is an HMAC of
// a time window under a key every process of the box shares (box_settings), so any
// process accepts what another handed out, and none keeps a list. A nonce is good in
// its window and the next: a client that just received one is never refused for the
// window turning over. "Nonce values MUST be unpredictable" (§8): without the key, the
// next window's nonce cannot be computed.
import { createHmac, timingSafeEqual } from 'node:crypto';

/** How long one nonce lasts (it is accepted for up to twice this). */
export const NONCE_WINDOW_SECONDS = 300;

export class DpopNonces {
  private cached: { window: number; nonce: string }[] = [];

  constructor(
    private readonly key: Buffer,
    private readonly clock: () => number = Date.now,
    private readonly windowSeconds = NONCE_WINDOW_SECONDS,
  ) {}

  /** The nonce to hand out now (DPoP-Nonce). */
  current(): string {
    return this.of(this.window());
  }

  /** Whether `nonce` is this window's or the previous one's. */
  accepts(nonce: string): boolean {
    const window = this.window();
    return same(nonce, this.of(window)) || same(nonce, this.of(window - 1));
  }

  private window(): number {
    return Math.floor(this.clock() / 1000 / this.windowSeconds);
  }

  private of(window: number): string {
    const hit = this.cached.find((c) => c.window === window);
    if (hit) return hit.nonce;
    const nonce = createHmac('sha256', this.key).update(`dpop-nonce.${window}`).digest().subarray(0, 18).toString('base64url');
    this.cached = [{ window, nonce }, ...this.cached.slice(0, 2)];
    return nonce;
  }
}

function same(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
