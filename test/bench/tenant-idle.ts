// make bench-tenants' idle boxes: what a host holds for boxes that serve nothing
// (its RSS and V8 heap, the connections of their roles), and how long a closed box
// takes to answer its first token. Read from outside, as an operator would: /proc,
// the host's /metrics, PostgreSQL's pg_stat_activity.
import { WebSocket, type MessageEvent } from 'undici';
import { basic, sleep } from '../support/box.js';
import type { Host } from '../support/host.js';
import { summary, type LatencySummary } from './latency.js';
import { rssBytes } from './process-stats.js';

const MB = 1024 * 1024;
/** A quiet moment before memory is read: the last requests' garbage collected, the sockets closed. */
const SETTLE_MS = Number(process.env.BENCH_TENANTS_SETTLE_MS ?? 3000);

/** A sample of the host's own metrics (the first series of `name`, or of `name` with `label`). */
function metric(text: string, name: string, label = ''): number {
  const line =
    text.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes(label)) ?? text.split('\n').find((l) => l.startsWith(`${name} `));
  return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : NaN;
}

/** The host's boxes in a state (`preparing`, `ready`, `failed`) or open. */
export async function boxesIn(host: Host, state: 'preparing' | 'ready' | 'failed' | 'open'): Promise<number> {
  return metric(await host.metrics(), 'boxauth_host_boxes', `state="${state}"`);
}

/** Waits until `test` holds of the host's count of boxes in `state`; throws after `timeoutMs`. */
export async function waitForBoxes(
  host: Host,
  state: 'ready' | 'open',
  test: (n: number) => boolean,
  timeoutMs: number,
  what: string,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const n = await boxesIn(host, state);
    if (test(n)) return;
    if (Date.now() > deadline) throw new Error(`${what}: ${n} boxes ${state} after ${timeoutMs / 1000} s`);
    if ((await boxesIn(host, 'failed')) > 0) throw new Error(`${what}: a box failed (the host's log says why)`);
    await sleep(250);
  }
}

export interface HostMemory {
  rssMb: number;
  /** V8's heap in use, as the host's nodejs_heap_size_used_bytes says. */
  heapMb: number;
}

/**
 * A full garbage collection in the host, through its inspector (node --inspect=127.0.0.1:`port`):
 * what is read after it is what the host holds, not what it has not collected yet.
 */
async function collectGarbage(port: number): Promise<void> {
  const [target] = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as { webSocketDebuggerUrl: string }[];
  const socket = new WebSocket(target!.webSocketDebuggerUrl);
  try {
    await new Promise((resolve, reject) => {
      socket.onopen = resolve;
      socket.onerror = reject;
    });
    await new Promise((resolve) => {
      socket.onmessage = (event: MessageEvent) => {
        if ((JSON.parse(String(event.data)) as { id?: number }).id === 1) resolve(undefined);
      };
      socket.send(JSON.stringify({ id: 1, method: 'HeapProfiler.collectGarbage' }));
    });
  } finally {
    socket.close();
  }
}

/** The host's RSS and heap after SETTLE_MS of quiet and a full garbage collection (`inspectPort`: the host's inspector). */
export async function hostMemory(host: Host, inspectPort: number): Promise<HostMemory> {
  await sleep(SETTLE_MS);
  await collectGarbage(inspectPort);
  const rss = rssBytes(host.process!.pid!) ?? NaN; // before /metrics, whose answer allocates
  return { rssMb: rss / MB, heapMb: metric(await host.metrics(), 'nodejs_heap_size_used_bytes') / MB };
}

/** The host's mean time to open a box (boxauth_host_box_open_seconds), ms, since it started. */
export async function meanOpenMs(host: Host): Promise<{ ms: number; opens: number }> {
  const text = await host.metrics();
  const opens = metric(text, 'boxauth_host_box_open_seconds_count');
  return { ms: (1000 * metric(text, 'boxauth_host_box_open_seconds_sum')) / opens, opens };
}

/**
 * Each team's root client asks its box for a token, one box after another, each timed from the
 * request to the answer: what the first application asking a closed box waits. At most `openCap`
 * boxes are open at once (the pass waits for the host to close some): each open box holds
 * connections, and PostgreSQL has max_connections of them.
 */
export async function firstTokens(host: Host, teams: string[], openCap: number): Promise<LatencySummary & { failed: number }> {
  const ms: number[] = [];
  let failed = 0;
  for (const [i, team] of teams.entries()) {
    if (i % 20 === 0) await waitForBoxes(host, 'open', (n) => n + 20 <= openCap, 120_000, 'boxes closing after idling');
    const box = host.box(team);
    const t0 = performance.now();
    const res = await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('root', box.rootSecret) });
    ms.push(performance.now() - t0);
    if (res.status !== 200) failed++;
  }
  return { ...summary(ms), failed };
}
