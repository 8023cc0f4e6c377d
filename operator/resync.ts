// The periodic resync, a slice of the namespaces at a time: every object is looked at once a
// period, but a thousand boxes are not all looked at in the same second, each with a connection
// to its database that stays open a moment after, while a change applied meanwhile waits for the
// CPU. A namespace's objects are all in one slice, so its Box's recheck and its records' go together.

/** How often the next slice is looked at. */
export const RESYNC_TICK_MS = 1000;

/** FNV-1a: a namespace's slice stays the same from one period, and one process, to the next. */
function hash(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

export class ResyncSchedule {
  /** One slice per tick of the period. */
  readonly slices: number;
  /** The time between two slices. */
  readonly intervalMs: number;
  private tick = 0;

  constructor(periodMs: number) {
    this.slices = Math.max(1, Math.round(periodMs / RESYNC_TICK_MS));
    this.intervalMs = periodMs / this.slices;
  }

  /** The slice a namespace's objects are looked at in. */
  slice(namespace: string): number {
    return hash(namespace) % this.slices;
  }

  /** The next tick: whether it begins a period, and which namespaces it takes. */
  next(): { first: boolean; inSlice: (namespace: string) => boolean } {
    const current = this.tick;
    this.tick = (this.tick + 1) % this.slices;
    return { first: current === 0, inSlice: (namespace) => this.slice(namespace) === current };
  }
}
