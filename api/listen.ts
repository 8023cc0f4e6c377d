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
