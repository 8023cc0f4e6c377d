// Ports for what the tests start. A server of ours listens on port 0 and says which port it got;
// a program that must be told its port ahead (kube-apiserver, etcd, slapd, PostgreSQL…) gets one
// from freePort, and another process of the machine may take that port before the program binds
// it (the suite runs beside other work): onFreePorts starts it again on new ones.
import { freePort } from '../../api/listen.js';

export { freePort };

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
