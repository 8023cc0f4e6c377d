// A DATABASE_URL read once: libpq's multi-host form, which node-postgres does not
// take, turned into the hosts to try and one single-host URL per host that it does.
//
//   postgres://u:p@db-1:5432,db-2:5432/boxauth?target_session_attrs=read-write
//
// libpq (34.1.1.2): "it is possible to specify multiple hosts … the hosts are tried in
// order until a connection is successful"; target_session_attrs says which kind of
// server is acceptable. boxauth writes, so its default is read-write where libpq's is
// any. What libpq would read and we would not (host lists in the query string) is
// refused rather than half understood.

/** libpq's target_session_attrs (PostgreSQL 14+). */
export const TARGET_SESSION_ATTRS = ['any', 'read-write', 'read-only', 'primary', 'standby', 'prefer-standby'] as const;
export type TargetSessionAttrs = (typeof TARGET_SESSION_ATTRS)[number];

export interface HostPort {
  host: string;
  port: number;
}

export interface DatabaseUrl {
  /** The hosts in the URL's order; one entry with host '' when the URL names none (node-postgres' defaults apply). */
  hosts: HostPort[];
  targetSessionAttrs: TargetSessionAttrs;
  /** load_balance_hosts=random: try the hosts in a random order each time, as libpq 16 does. */
  loadBalance: boolean;
  /** The URL node-postgres takes for one of the hosts: the same user, database and parameters. */
  forHost(host: HostPort): string;
  /** The hosts as people write them, for logs and status (no user, no password). */
  where: string;
  /** The user and the database the URL names ('' where it names none). */
  user: string;
  database: string;
}

export class DatabaseUrlError extends Error {}

const DEFAULT_PORT = 5432;
/** Parameters read here and not passed on (node-postgres would ignore them, but a reader of its config should not see them). */
const OURS = ['target_session_attrs', 'load_balance_hosts'];

interface Parts {
  scheme: string;
  /** user[:password]@, as written ('' when absent). */
  userinfo: string;
  hostspec: string;
  path: string;
  query: string | undefined;
}

function partsOf(url: string, name: string): Parts {
  const m = /^(postgres(?:ql)?):\/\/([^/?#]*)([^?#]*)(\?[^#]*)?$/.exec(url);
  if (!m) throw new DatabaseUrlError(`${name} must be a postgres:// URL (a # in the user or the password must be percent-encoded)`);
  const [, scheme, authority, path, query] = m as unknown as [string, string, string, string, string | undefined];
  const at = authority.lastIndexOf('@');
  // A / ? or # in a password ends the authority early: what follows would be read as hosts or a
  // database, and echoed in errors. An @ after the authority says so; the URL is refused unread.
  if (path.includes('@') || (at < 0 && (query ?? '').includes('@'))) {
    throw new DatabaseUrlError(`${name}: a / ? # or @ in the user or the password must be percent-encoded (encodeURIComponent)`);
  }
  return {
    scheme,
    userinfo: at >= 0 ? authority.slice(0, at + 1) : '',
    hostspec: at >= 0 ? authority.slice(at + 1) : authority,
    path,
    query,
  };
}

/**
 * `url` with another user and password, and (when given) other hosts (`db-1:5432,db-2:5432`; one or several hosts
 * alike) and another database.
 */
export function rewriteDatabaseUrl(url: string, change: { user: string; password: string; hosts?: string; database?: string }): string {
  const { scheme, hostspec, path, query } = partsOf(url, 'the database URL');
  const userinfo = `${encodeURIComponent(change.user)}:${encodeURIComponent(change.password)}@`;
  const database = change.database === undefined ? path : `/${encodeURIComponent(change.database)}`;
  return `${scheme}://${userinfo}${change.hosts ?? hostspec}${database}${query ?? ''}`;
}

export function parseDatabaseUrl(url: string, name = 'DATABASE_URL'): DatabaseUrl {
  const { scheme, userinfo, hostspec, path, query } = partsOf(url, name);

  const params = new URLSearchParams(query?.slice(1) ?? '');
  for (const key of ['host', 'hostaddr', 'port']) {
    if (params.get(key)?.includes(',')) {
      throw new DatabaseUrlError(`${name}: list several hosts in the URL itself (postgres://user@db-1:5432,db-2:5432/db), not in ?${key}=`);
    }
  }
  const attrs = params.get('target_session_attrs') ?? 'read-write';
  if (!(TARGET_SESSION_ATTRS as readonly string[]).includes(attrs)) {
    throw new DatabaseUrlError(`${name}: target_session_attrs must be one of ${TARGET_SESSION_ATTRS.join(', ')}, got "${attrs}"`);
  }
  const balance = params.get('load_balance_hosts') ?? 'disable';
  if (balance !== 'disable' && balance !== 'random') {
    throw new DatabaseUrlError(`${name}: load_balance_hosts must be disable or random, got "${balance}"`);
  }
  for (const key of OURS) params.delete(key);
  const rest = params.toString();

  const hosts = hostspec === '' ? [{ host: '', port: DEFAULT_PORT }] : hostspec.split(',').map((h) => hostPort(h, name));
  const seen = new Set<string>();
  for (const h of hosts) {
    const key = `${h.host.toLowerCase()}:${h.port}`;
    if (seen.has(key)) throw new DatabaseUrlError(`${name} names ${h.host}:${h.port} twice`);
    seen.add(key);
  }
  const forHost = (h: HostPort): string =>
    `${scheme}://${userinfo}${h.host === '' ? '' : `${bracket(h.host)}:${h.port}`}${path}${rest ? `?${rest}` : ''}`;
  // What node-postgres will parse (WHATWG URL rules), refused now rather than at the first connection.
  // The URL is never in the message: it may hold a password. (A URL without a host, node-postgres
  // reads with a stand-in host.)
  for (const h of hosts) {
    if (!URL.canParse(forHost(h.host === '' ? { host: 'localhost', port: h.port } : h))) {
      throw new DatabaseUrlError(
        `${name} is not a valid URL: characters such as @ : / ? # % [ ] { } ^ or a space in the user or the password must be percent-encoded`,
      );
    }
  }
  return {
    hosts,
    targetSessionAttrs: attrs as TargetSessionAttrs,
    loadBalance: balance === 'random',
    forHost,
    where: hostspec === '' ? '(the default host)' : hosts.map((h) => `${bracket(h.host)}:${h.port}`).join(', '),
    user: decoded(userinfo.replace(/(:[^]*)?@$/, ''), `${name}: the user`),
    database: decoded(path.replace(/^\//, ''), `${name}: the database name`),
  };
}

/** decodeURIComponent, refusing a stray % with a DatabaseUrlError that names the part (not its text). */
function decoded(text: string, what: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    throw new DatabaseUrlError(`${what} is not valid percent-encoding (write % as %25)`);
  }
}

function hostPort(spec: string, name: string): HostPort {
  const m = /^(\[[0-9A-Fa-f:.]+\]|[^[\]:]+)(?::(\d{1,5}))?$/.exec(spec);
  const port = m?.[2] === undefined ? DEFAULT_PORT : Number(m[2]);
  if (!m || port < 1 || port > 65535) throw new DatabaseUrlError(`${name}: "${spec}" is not host, host:port or [v6-address]:port`);
  const host = decoded(m[1]!.replace(/^\[(.*)\]$/, '$1'), `${name}: the host "${spec}"`);
  return { host, port };
}

function bracket(host: string): string {
  if (host.includes(':')) return `[${host}]`;
  return host.startsWith('/') ? encodeURIComponent(host) : host;
}

/** What one server said of itself when asked, on a fresh connection. */
export interface ServerState {
  inRecovery: boolean;
  /** SHOW transaction_read_only (default_transaction_read_only, or a standby). */
  readOnly: boolean;
  /** The timeline a primary writes on (a promotion starts a new one); undefined for a standby, or not asked. */
  timeline?: number;
}

/** Whether a server in `state` is one `attrs` accepts; prefer-standby accepts anything (see pickHost). */
export function fits(attrs: TargetSessionAttrs, state: ServerState): boolean {
  switch (attrs) {
    case 'any':
    case 'prefer-standby':
      return true;
    case 'read-write':
      return !state.readOnly;
    case 'read-only':
      return state.readOnly;
    case 'primary':
      return !state.inRecovery;
    case 'standby':
      return state.inRecovery;
  }
}

/**
 * The host to use, from what each host answered (in the order tried): the first that fits;
 * for prefer-standby the first standby, else the first that answered at all.
 *
 * Two primaries at once is a split brain: an old primary back from a crash or a partition,
 * never turned into a standby of the one promoted meanwhile. Writes belong on the promoted
 * one, whose timeline is the higher (each promotion starts the next), so among primaries
 * that fit read-write or primary, the highest timeline wins; the URL's order decides ties.
 */
export function pickHost<H>(attrs: TargetSessionAttrs, answers: { host: H; state?: ServerState }[]): H | undefined {
  const reached = answers.filter((a): a is { host: H; state: ServerState } => a.state !== undefined);
  if (attrs === 'prefer-standby') return (reached.find((a) => a.state.inRecovery) ?? reached[0])?.host;
  const fitting = reached.filter((a) => fits(attrs, a.state));
  if (attrs !== 'read-write' && attrs !== 'primary') return fitting[0]?.host;
  const timeline = (a: { state: ServerState }): number => a.state.timeline ?? 0;
  return fitting.reduce<(typeof fitting)[number] | undefined>((best, a) => (best && timeline(best) >= timeline(a) ? best : a), undefined)
    ?.host;
}
