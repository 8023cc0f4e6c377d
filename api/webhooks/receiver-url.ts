// Whether a Webhook's URL may be sent to, checked when it is written (a refused URL is a 422 at
// once, not a notice given up days later). The send checks again, every resolved address, in the
// connection's own lookup (api/notices/post.ts): a name may resolve elsewhere later.
// TODO(i55-outbox): delegate to the outbox's registration-time check once it lands.

/** Why `url` may not receive webhooks, or undefined. */
export function receiverUrlProblem(url: string): Promise<string | undefined> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return Promise.resolve('must be an absolute URL');
  }
  if (parsed.protocol !== 'https:') return Promise.resolve('must be https');
  if (parsed.username || parsed.password) return Promise.resolve('must not carry a user name or password');
  return Promise.resolve(undefined);
}
