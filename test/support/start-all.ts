// Several servers of a hook started at once. With Promise.all, one that fails leaves the others
// running and unnamed: the hook's variables are never set, so its after() cannot stop them, and
// they stay until the open-handle check of the run (./open-handles.ts) stops them.

/** What a test starts and stops: a server or program of the tests (stop or kill), a browser (close). */
type Stoppable = { stop(): Promise<unknown> } | { close(): Promise<unknown> } | { kill(): Promise<unknown> };

function stopIt(started: Stoppable): Promise<unknown> {
  if ('stop' in started) return started.stop();
  if ('close' in started) return started.close();
  return started.kill();
}

/**
 * All of `starts`, as Promise.all gives them; when one fails, those that started are stopped and
 * the (first) failure is thrown.
 */
export async function startAll<T extends readonly Promise<Stoppable>[] | []>(
  starts: T,
): Promise<{ -readonly [P in keyof T]: Awaited<T[P]> }> {
  const settled = (await Promise.allSettled(starts)) as PromiseSettledResult<Stoppable>[];
  const failed = settled.find((s) => s.status === 'rejected');
  if (!failed) return settled.map((s) => (s as PromiseFulfilledResult<Stoppable>).value) as { -readonly [P in keyof T]: Awaited<T[P]> };
  const stops = settled.flatMap((s) => (s.status === 'fulfilled' ? [stopIt(s.value).catch(() => undefined)] : []));
  await Promise.all(stops);
  throw failed.reason;
}
