// A TCP proxy in front of PostgreSQL that a test can cut and restore: the
// database becomes unreachable for a box as it would when its server goes away
// (connections reset, new ones refused), without touching the shared server; or
// silent, as a machine that is gone is (its packets dropped: connections stay
// open and nothing comes back, new ones are never answered).
import net from 'node:net';

export class TcpProxy {
  private server: net.Server | undefined;
  private readonly sockets = new Set<net.Socket>();
  private silent = false;

  private constructor(
    private readonly target: { host: string; port: number },
    public port = 0,
  ) {}

  static async start(target: { host: string; port: number }): Promise<TcpProxy> {
    const proxy = new TcpProxy(target);
    await proxy.restore();
    return proxy;
  }

  /** The URL `url` with this proxy as its host and port. */
  through(url: string): string {
    const u = new URL(url);
    u.hostname = '127.0.0.1';
    u.port = String(this.port);
    return u.toString();
  }

  /** Stops accepting connections and resets every open one. */
  async cut(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Nothing goes through any more, either way, and nothing is closed: a peer that waits for an answer waits. */
  silence(): void {
    this.silent = true;
    for (const socket of this.sockets) {
      socket.unpipe();
      socket.pause();
    }
  }

  /** Accepts connections again, on the same port (after silence(): the connections held open are reset, as their server would have). */
  async restore(): Promise<void> {
    if (this.silent) {
      this.silent = false;
      await this.cut();
    }
    const server = net.createServer((client) => {
      if (this.silent) {
        this.sockets.add(client);
        client.on('close', () => this.sockets.delete(client));
        client.on('error', () => undefined);
        client.pause();
        return;
      }
      const upstream = net.connect(this.target.port, this.target.host);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => undefined);
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', resolve));
    this.port = (server.address() as net.AddressInfo).port;
    this.server = server;
  }
}
