// When an answer is over, which node does not always say: a response waiting behind another on a
// pipelined connection is destroyed without 'close' or 'finish' when the connection closes. So
// whatever is counted per request in flight (a hosted box's line, a request's span, an argon2 run
// queued for a client who left) watches the connection as well as the response.
import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/** Per connection, what to do if it closes, for the answers it carries that are not over yet. */
const onCloseOf = new WeakMap<Socket, Set<() => void>>();

/** Calls `then` when `connection` closes; the function returned forgets it. One listener a connection, however many requests it pipelines. */
export function whenClosed(connection: Socket, then: () => void): () => void {
  let waiting = onCloseOf.get(connection);
  if (waiting === undefined) {
    const those = (waiting = new Set());
    onCloseOf.set(connection, those);
    connection.once('close', () => {
      onCloseOf.delete(connection);
      for (const one of those) one();
    });
  }
  waiting.add(then);
  return () => void waiting.delete(then);
}

/**
 * Calls `done` once, when `res` is over: sent whole and closed, or its connection closed first,
 * even for a response that waited behind another on a pipelined connection. What is counted per
 * request in flight (a hosted box's line) is given back here, never on the response's 'close' alone.
 */
export function whenOver(res: ServerResponse, done: () => void): void {
  let over = false;
  const end = (): void => {
    if (over) return;
    over = true;
    forget();
    done();
  };
  const connection = res.req.socket;
  const forget = connection.destroyed ? () => undefined : whenClosed(connection, end);
  res.once('close', end);
  if (connection.destroyed) queueMicrotask(end);
}
