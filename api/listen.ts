// Listening on a port of the configuration: a port that cannot be had is named
// with the variable that chose it, so the person who set it knows what to change.
import net, { type Server } from 'node:net';

/** A port the box could not listen on (start-up stops: exit code 3 from a worker). */
export class PortUnavailable extends Error {}

/** Why `port` could not be had, in terms of the variable that chose it; undefined: not a matter of the port. */
export function portUnavailable(
  code: string | undefined,
  port: number,
  host: string,
  variable: string,
  hostVariable = 'BOXAUTH_HOST',
): PortUnavailable | undefined {
  if (code === 'EADDRINUSE')
    return new PortUnavailable(`port ${port} (${variable}) is in use: stop what listens there, or set ${variable} to another port`);
  if (code === 'EACCES') return new PortUnavailable(`port ${port} (${variable}) may not be opened by this user: choose a port above 1023`);
  if (code === 'EADDRNOTAVAIL') return new PortUnavailable(`${host} (${hostVariable}) is not an address of this machine`);
  return undefined;
}

export function listenOn(server: Server, port: number, host: string, variable: string, hostVariable = 'BOXAUTH_HOST'): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => reject(portUnavailable(err.code, port, host, variable, hostVariable) ?? err));
    server.listen(port, host, () => resolve());
  });
}

/** A port nothing listens on now, for a server of ours that is about to take it (the embedded PostgreSQL, make box's metrics). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** What a program or a script says when the port it was given is taken. */
const TAKEN = /EADDRINUSE|address already in use|is in use/i;

/** Whether `err` says a port was taken (and a start on other ports may work). */
export function portTaken(err: unknown): boolean {
  return TAKEN.test(err instanceof Error ? `${err.message}\n${err.stack ?? ''}` : String(err));
}

/** `count` ports, different from each other, that nothing listens on now. */
export async function freePorts(count: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) ports.add(await freePort());
  return [...ports];
}

/** `N` numbers, as a tuple: `([a, b]) =>` gives numbers, not possibly undefined ones. */
type Ports<N extends number, T extends number[] = []> = T['length'] extends N ? T : Ports<N, [...T, number]>;

/**
 * `start` on `count` free ports; when it fails because one was taken meanwhile (`taken`), again on
 * new ones (3 tries in all). `start` must clean up after a failed start itself.
 */
export async function onFreePorts<N extends 1 | 2 | 3, T>(
  count: N,
  start: (ports: Ports<N>) => Promise<T>,
  taken: (err: unknown) => boolean = portTaken,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start((await freePorts(count)) as Ports<N>);
    } catch (err) {
      if (attempt >= 3 || !taken(err)) throw err;
    }
  }
}
