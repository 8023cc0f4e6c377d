// A `scope` parameter (RFC 6749 §3.3: "a list of space-delimited, case-sensitive
// strings") as its list: every floor that reads a grant's scope reads it here.
export const scopesOf = (scope: string | null | undefined): string[] => (scope ?? '').split(' ').filter(Boolean);
