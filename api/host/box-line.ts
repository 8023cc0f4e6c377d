// A hosted box's line: at most `limit` of its requests in flight, at most `queue`
// more waiting, first come first served. Every box has its own, so one box's
// load holds another box's requests by no more than `limit` requests of each
// busy box (each of which gives the event loop back within a decision's turn,
// api/policy/budget.ts), however many it sends: the rest wait in its own line.

export class BoxLine {
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(
    private readonly limit: number,
    private readonly queue: number,
  ) {}

  /** A place in flight: now, later (the promise), or none ('full': the line is as long as it may be). */
  enter(): Promise<void> | 'full' | undefined {
    if (this.running < this.limit) {
      this.running++;
      return undefined;
    }
    if (this.waiting.length >= this.queue) return 'full';
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  /** Gives a place back: to the first waiting, else free. */
  leave(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.running--;
  }

  /** Requests in flight or waiting. */
  get busy(): number {
    return this.running + this.waiting.length;
  }
}
