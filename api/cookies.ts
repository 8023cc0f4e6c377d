// A Cookie header read as its cookies (RFC 6265 §5.4's name=value pairs), for
// every door: the box's own pages, and the gates, which hand a guarded app's
// request's cookies to the decision point (api/http/gate-credential.ts).

/** A Cookie header's cookies (the first of a name wins; a malformed one is left out). */
export function parseCookies(header: string | undefined): Record<string, string> {
  const out = Object.create(null) as Record<string, string>;
  for (const part of (header ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq < 1) continue;
    const name = part.slice(0, eq).trim();
    try {
      out[name] ??= decodeURIComponent(part.slice(eq + 1).trim());
    } catch {
      // a malformed cookie is ignored
    }
  }
  return out;
}
