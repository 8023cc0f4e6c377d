// How far V8 lets the heap grow past what lives in it before a full collection. Its
// default, for a heap that may grow past 2 GB, is up to 4 × the live heap; under load
// the box promotes request garbage at 10–30 MB/s, so a worker with 45 MB live held
// 150–300 MB of old space and passed the 200 MB of RSS a worker may use (issue 69).
// At 1.5 × it stays near 60 MB, for a full collection every second or two, its marking
// mostly concurrent (docs/operations/operations.md).
import v8 from 'node:v8';

/** The heap may grow to (1 + this / 100) × what lived after the last full collection. */
export const HEAP_GROWING_PERCENT = 50;

/**
 * The V8 flags the box sets, unless the operator gave them to node (`node --heap-growing-percent=N
 * dist/api/main.js`; node refuses this flag in NODE_OPTIONS).
 */
export function heapFlags(execArgv: readonly string[]): string[] {
  return execArgv.some((arg) => /^--heap[-_]growing[-_]percent\b/.test(arg)) ? [] : [`--heap-growing-percent=${HEAP_GROWING_PERCENT}`];
}

/** Sets them in this process: read at each full collection, so it holds from the first (each worker sets its own). */
export function tuneHeap(): void {
  for (const flag of heapFlags(process.execArgv)) v8.setFlagsFromString(flag);
}
