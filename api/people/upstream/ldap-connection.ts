// One connection to an LDAP directory (ldapts), as ./ldap.ts uses it: TLS before any bind (LDAPS,
// or StartTLS unless the host is a loopback), a deadline on connecting and on every operation,
// one socket for its whole life, and nothing left open by close().
import net from 'node:net';
import tls from 'node:tls';
import type { Client, Entry, Filter } from 'ldapts';
import { ldap } from './ldap-library.js';
import { isLoopback } from '../../mail/transport.js';
import { UpstreamError, type LdapSettings } from './profile.js';

export class LdapConnection {
  private readonly sockets: net.Socket[] = [];
  private readonly client: Client;

  private constructor(
    private readonly settings: LdapSettings,
    readonly timeoutMs: number,
  ) {
    const url = new URL(settings.url);
    // ldapts reconnects by itself when an operation finds the socket closed: without TLS, and
    // without the bind. A bind sent on such a connection would carry the password in clear, so
    // each factory gives the client its one socket and then refuses.
    let opened = false;
    const once = <S extends net.Socket>(make: () => S): S => {
      if (opened) throw new Error('the connection to the directory was closed');
      opened = true;
      const socket = make();
      this.sockets.push(socket);
      return socket;
    };
    let upgraded = false;
    this.client = new (ldap().Client)({
      url: settings.url,
      timeout: timeoutMs,
      connectTimeout: timeoutMs,
      ...(url.protocol === 'ldaps:' ? { tlsOptions: this.tlsOptions() } : {}),
      createConnection: ((port: number, host: string) => once(() => net.connect(port, host))) as typeof net.connect,
      createSecureConnection: ((...args: Parameters<typeof tls.connect>) => {
        // StartTLS upgrades the one plain socket (its options carry it); LDAPS opens the one socket.
        if (url.protocol === 'ldaps:') return once(() => tls.connect(...args));
        if (upgraded) throw new Error('the connection to the directory was closed');
        upgraded = true;
        const socket = tls.connect(...args);
        this.sockets.push(socket);
        return socket;
      }) as typeof tls.connect,
    });
  }

  private tlsOptions(): tls.ConnectionOptions {
    const host = new URL(this.settings.url).hostname.replace(/^\[|\]$/g, '');
    return {
      ...(this.settings.ca ? { ca: this.settings.ca } : {}),
      host,
      // SNI names a host, never an address (RFC 6066 §3).
      ...(net.isIP(host) ? {} : { servername: host }),
      minVersion: 'TLSv1.2',
    };
  }

  /** Connects, with TLS before anything else is said (LDAPS, or StartTLS). */
  static async open(settings: LdapSettings, timeoutMs: number): Promise<LdapConnection> {
    const connection = new LdapConnection(settings, timeoutMs);
    const url = new URL(settings.url);
    try {
      if (url.protocol === 'ldaps:' || !(settings.startTLS ?? !isLoopback(url.hostname))) {
        await connection.within(
          'connecting',
          connection.client.search('', { scope: 'base', filter: '(objectClass=*)', attributes: ['1.1'] }).catch(rootDseRefused),
        );
      } else {
        // ldapts answers the StartTLS request in time, not the handshake after it: the deadline is ours.
        await connection.within('StartTLS', connection.client.startTLS(connection.tlsOptions()));
      }
    } catch (err) {
      await connection.close();
      throw failure('connecting', err, timeoutMs);
    }
    return connection;
  }

  /** A simple bind; the caller says what a refusal means (a wrong password, or a misconfigured service account). */
  async bind(dn: string, password: string): Promise<void> {
    await this.within('bind', this.client.bind(dn, password));
  }

  async search(
    base: string,
    filter: Filter,
    opts: { scope: 'sub' | 'base'; attributes: string[]; binary?: string[]; sizeLimit?: number },
  ): Promise<Entry[]> {
    const result = await this.within(
      'search',
      this.client.search(base, {
        scope: opts.scope,
        filter,
        attributes: opts.attributes,
        explicitBufferAttributes: opts.binary ?? [],
        ...(opts.sizeLimit ? { sizeLimit: opts.sizeLimit } : { paged: { pageSize: 200 } }),
      }),
    );
    return result.searchEntries;
  }

  /** Unbinds, then closes every socket it had, answered or not. */
  async close(): Promise<void> {
    await Promise.race([this.client.unbind().catch(() => undefined), new Promise((resolve) => setTimeout(resolve, 200).unref())]);
    for (const socket of this.sockets) socket.destroy();
  }

  /** `work`, or the directory is unavailable once timeoutMs has passed (and the sockets are closed). */
  private async within<T>(what: string, work: Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        for (const socket of this.sockets) socket.destroy();
        reject(new UpstreamError('unavailable', `the directory did not answer ${what} within ${this.timeoutMs / 1000} s`));
      }, this.timeoutMs);
    });
    try {
      return await Promise.race([work, late]);
    } finally {
      clearTimeout(timer);
    }
  }
}

/** Reading the root DSE only opens the connection: a directory that refuses to show it still answered. */
const rootDseRefused = (err: unknown): void => {
  if (!(err instanceof ldap().ResultCodeError)) throw err;
};

/** What failed, for the log: an UpstreamError as it is, anything else unavailable with its reason. */
export function failure(step: string, err: unknown, timeoutMs: number): UpstreamError {
  if (err instanceof UpstreamError) return err;
  const message = err instanceof Error ? err.message : String(err);
  if (/timed? ?out/i.test(message))
    return new UpstreamError('unavailable', `the directory did not answer ${step} within ${timeoutMs / 1000} s`);
  const code = (err as { code?: unknown }).code;
  const tlsFault = typeof code === 'string' && /CERT|SSL|TLS|SELF_SIGNED|UNABLE_TO/.test(code);
  return new UpstreamError(
    'unavailable',
    `${tlsFault ? 'TLS with the directory failed' : `the directory failed ${step}`}: ${message.split('\n')[0]}`,
  );
}
