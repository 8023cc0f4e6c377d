// Before `box add` remembers a URL, the URL is asked who it is: a box answers its
// authorization server metadata (RFC 8414) under its base URL, and names itself in
// `issuer`. RFC 8414 §3.3: "The issuer value returned MUST be identical to the
// authorization server's issuer identifier value" — a box reached under another name
// (localhost for 127.0.0.1, http for https) issues tokens for its issuer, not for it.
import { errorMessage } from '../errors.js';
import { CliError } from './api.js';
import { printable } from './output.js';

/** How long a URL may take to answer: a host that drops packets would otherwise hold the command for minutes. */
const TIMEOUT_MS = 10_000;

const NOTHING_SAVED = 'nothing saved (--no-check saves it without asking the box)';

/** Resolves when `url` (no trailing slash) is a box whose issuer is `url`; otherwise a CliError saying what it is. */
export async function checkBoxUrl(url: string): Promise<void> {
  const metadata = `${url}/.well-known/oauth-authorization-server`;
  let res: Response;
  try {
    res = await fetch(metadata, { headers: { Accept: 'application/json' }, signal: AbortSignal.timeout(TIMEOUT_MS) });
  } catch (err) {
    const cause = (err as { cause?: { code?: string; message?: string } }).cause;
    const why =
      (err as { name?: string }).name === 'TimeoutError' ? `no answer in ${TIMEOUT_MS / 1000} s` : (cause?.code ?? cause?.message);
    throw new CliError(`cannot reach ${url} (${why ?? errorMessage(err)}); ${NOTHING_SAVED}`, 1, { cause: err });
  }
  if (!res.ok) throw new CliError(`${url} is not a box: ${metadata} answered ${res.status}; ${NOTHING_SAVED}`);
  const body = (await res.json().catch(() => undefined)) as { issuer?: unknown } | undefined;
  if (typeof body?.issuer !== 'string') throw new CliError(`${url} is not a box: ${metadata} names no issuer; ${NOTHING_SAVED}`);
  if (body.issuer !== url) {
    const issuer = printable(body.issuer);
    throw new CliError(`the box at ${url} calls itself ${issuer}: add it as ${issuer}; ${NOTHING_SAVED}`);
  }
}
