// The path of a request at a gate, as policies see it: one meaning per path. A
// gateway and the app behind it may read a path differently (`/admin` and
// `/%61dmin`, `/public/../admin`, `//admin`, `/admin%2F..`), and a policy that
// tested one reading while the app served another would be bypassed. So the path
// is decoded once (percent-encoding of everything but the characters that would
// change its shape), and a path whose meaning depends on who reads it — an encoded
// `/` or `\`, a dot segment (`..;x` too: servlet containers drop a segment's
// ;parameters before resolving it), an empty segment, a NUL, broken encoding — is refused,
// not guessed at. Gateways can normalize first (Envoy's normalize_path and
// merge_slashes, docs/guides); what still arrives ambiguous is denied.

export type PathReading = { path: string; query: Record<string, string | string[]> } | { refused: string };

const MAX_QUERY_PARAMETERS = 100;

function decode(part: string): string | undefined {
  try {
    return decodeURIComponent(part);
  } catch {
    return undefined;
  }
}

/** A request target (path and query, as the gateway sends it) read once, or why it is refused. */
export function readTarget(target: string): PathReading {
  const hash = target.indexOf('#');
  const noFragment = hash === -1 ? target : target.slice(0, hash);
  const q = noFragment.indexOf('?');
  const raw = q === -1 ? noFragment : noFragment.slice(0, q);
  const search = q === -1 ? '' : noFragment.slice(q + 1);
  if (!raw.startsWith('/')) return { refused: 'the path must begin with /' };
  if (/%(2f|5c|00)/i.test(raw) || raw.includes('\\') || raw.includes('\0')) {
    return { refused: 'the path holds an encoded slash, a backslash or a NUL: its meaning depends on who reads it' };
  }
  const segments = raw.slice(1).split('/');
  const decoded: string[] = [];
  for (const [i, segment] of segments.entries()) {
    const value = decode(segment);
    if (value === undefined) return { refused: 'the path holds malformed percent-encoding' };
    // Tomcat, Jetty and Spring drop a segment's ;parameters first: `..;x` is `..` to them, `;x` empty.
    const bare = value.split(';')[0];
    if (bare === '.' || bare === '..') return { refused: 'the path holds a dot segment (. or ..): normalize it at the gateway' };
    if (bare === '' && i < segments.length - 1) return { refused: 'the path holds an empty segment (//)' };
    decoded.push(value);
  }
  const query: Record<string, string | string[]> = Object.create(null) as Record<string, string | string[]>;
  let count = 0;
  for (const pair of search.split('&')) {
    if (pair === '') continue;
    if (++count > MAX_QUERY_PARAMETERS) return { refused: `more than ${MAX_QUERY_PARAMETERS} query parameters` };
    const eq = pair.indexOf('=');
    const name = decode((eq === -1 ? pair : pair.slice(0, eq)).replace(/\+/g, ' '));
    const value = decode((eq === -1 ? '' : pair.slice(eq + 1)).replace(/\+/g, ' '));
    if (name === undefined || value === undefined) return { refused: 'the query holds malformed percent-encoding' };
    if (name.includes('\0') || value.includes('\0')) return { refused: 'the query holds a NUL' };
    const prior = query[name];
    query[name] = prior === undefined ? value : [...(Array.isArray(prior) ? prior : [prior]), value];
  }
  return { path: `/${decoded.join('/')}`, query };
}
