// Cluster DNS for the processes the operator's tests run on this machine (the
// operator, and box pods run from their Deployments), which has none: the
// test cluster is an API server without CoreDNS or kube-proxy. Preloaded into a
// process with NODE_OPTIONS (clusterDnsEnv() of kube.ts), it answers every Service name
// (<service>.<namespace>.svc[.cluster.local]) with 127.0.0.1, and leaves every
// other name to the system's resolver. A test then plays what backs a Service
// as a kube-proxy would give it: listening on 127.0.0.1, at the port the
// Service says (the Service's port is the real one; nothing else is bent).
import dns from 'node:dns';

const SERVICE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?\.[a-z0-9]([-a-z0-9]*[a-z0-9])?\.svc(\.cluster\.local)?\.?$/i;

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | dns.LookupAddress[], family?: number) => void;

const system = dns.lookup.bind(dns) as (hostname: string, options: dns.LookupOptions, callback: LookupCallback) => void;

function lookup(hostname: string, options: number | dns.LookupOptions | LookupCallback, callback?: LookupCallback): void {
  const cb = (typeof options === 'function' ? options : callback)!;
  const opts: dns.LookupOptions = typeof options === 'function' ? {} : typeof options === 'number' ? { family: options } : options;
  if (!SERVICE.test(hostname)) return system(hostname, opts, cb);
  process.nextTick(() => (opts.all ? cb(null, [{ address: '127.0.0.1', family: 4 }]) : cb(null, '127.0.0.1', 4)));
}

// node:net looks dns.lookup up on the module at each connection: replacing it there is enough.
Object.assign(dns, { lookup });
