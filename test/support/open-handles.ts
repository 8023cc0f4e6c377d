// Every mocha run ends when its tests end. What a test leaves open (a server, a socket, a child
// process, a timer) keeps node running after mocha's summary, and a CI would then wait for its
// time limit instead of failing (a before-all hook that failed half-way left a listener open).
// Loaded with --require after the other fixtures, so that its teardown is the last: the process
// then gets LINGER_MS to let go of what is still closing; whatever holds it after that is named on
// stderr, a child process left running is stopped, and the run exits with a failure of its own.
import { ChildProcess } from 'node:child_process';
import net from 'node:net';

const LINGER_MS = 10_000;

/** What `handle` is, in words a person can trace to a test; undefined: the process's own stdio. */
function described(handle: unknown): string | undefined {
  if (handle === process.stdin || handle === process.stdout || handle === process.stderr) return undefined;
  if (handle instanceof net.Server) {
    const address = handle.address();
    return `a server listening on ${typeof address === 'string' ? address : address ? `${address.address}:${address.port}` : '(no address)'}`;
  }
  if (handle instanceof net.Socket) {
    return `a socket from ${handle.localAddress ?? '?'}:${handle.localPort ?? '?'} to ${handle.remoteAddress ?? '?'}:${handle.remotePort ?? '?'}`;
  }
  if (handle instanceof ChildProcess) return `a child process, pid ${handle.pid ?? '?'}: ${handle.spawnargs.join(' ')}`;
  return (handle as object | null)?.constructor?.name ?? String(handle);
}

/** The objects behind the process's handles. Not in @types/node, still in node (the resources' kinds alone say "TCPServerWrap", not which server). */
function activeHandles(): unknown[] {
  return (process as unknown as { _getActiveHandles(): unknown[] })._getActiveHandles();
}

/** What keeps the process alive but stdio: each handle, and timers and other resources by kind. */
export function openHandles(): string[] {
  const named = activeHandles()
    .map(described)
    .filter((d): d is string => d !== undefined);
  const handleKinds = new Set(['TCPServerWrap', 'TCPSocketWrap', 'TCPWrap', 'PipeWrap', 'TTYWrap', 'ProcessWrap', 'UDPWrap']);
  const counts = new Map<string, number>();
  for (const kind of process.getActiveResourcesInfo()) if (!handleKinds.has(kind)) counts.set(kind, (counts.get(kind) ?? 0) + 1);
  return [...named, ...[...counts].map(([kind, n]) => `${n} × ${kind}`)];
}

export function mochaGlobalTeardown(): void {
  // Unref'd: when everything has closed, the process ends before it fires.
  setTimeout(() => {
    const open = openHandles();
    process.stderr.write(
      `\nopen handles: the tests have ended, but ${LINGER_MS / 1000} s later this still keeps the run from exiting ` +
        `(a test or hook that did not close what it opened):\n${(open.length ? open : ['(nothing node names)']).map((h) => `  - ${h}\n`).join('')}`,
    );
    // A child process left running would outlive the run: it is told to stop.
    for (const handle of activeHandles()) if (handle instanceof ChildProcess && handle.exitCode === null) handle.kill('SIGTERM');
    // After mocha's own exit listener (which sets the number of failed tests): a run that leaves
    // something open fails even when every test passed.
    process.on('exit', () => {
      process.exitCode = Number(process.exitCode) || 1;
    });
    process.exit(1);
  }, LINGER_MS).unref();
}
