// The sending loop of an outbox whose rows are taken under a lease (api/mail/outbox.ts, the mail;
// api/notices/outbox.ts, the notices): while it has free places it claims due rows, as many as it
// has places, and sends each; a send that ends, a claim that filled every place, or a wake (a
// NOTIFY, a poll) claims again. One claim at a time: a wake during a claim claims once more after
// it. What a claim and a send are, and what a failure means, is the outbox's own.
export class LeasedSends<T> {
  private readonly sending = new Set<Promise<void>>();
  private claiming = false;
  private again = false;
  private stopped = false;

  constructor(
    /** How many sends may be under way at once in this process. */
    private readonly places: number,
    /** Up to `free` due rows, leased to this process. */
    private readonly claim: (free: number) => Promise<T[]>,
    /** Sends one claimed row; never rejects (a failure is the outbox's to record). */
    private readonly send: (row: T) => Promise<void>,
    /** A claim failed (the database away): said, and tried again at the next wake. */
    private readonly claimFailed: (err: unknown) => void,
  ) {}

  /** Claims and sends what is due, unless stopped or every place is taken (a send that ends wakes it again). */
  wake(): void {
    if (this.stopped) return;
    if (this.claiming) {
      this.again = true;
      return;
    }
    const free = this.places - this.sending.size;
    if (free <= 0) return;
    this.claiming = true;
    this.again = false;
    this.claim(free)
      .then(
        (rows) => {
          for (const row of rows) this.track(this.send(row));
          if (rows.length === free) this.again = true; // more may be due
        },
        (err: unknown) => this.claimFailed(err),
      )
      .finally(() => {
        this.claiming = false;
        if (this.again) this.wake();
      });
  }

  /**
   * Nothing new is claimed; the sends under way (and `also`: a dispatch, say) may finish within
   * `waitMs` (the shutdown's drain). One that takes longer is left to its lease: another process,
   * or this one restarted, sends it.
   */
  async stop(waitMs: number, also: (Promise<unknown> | undefined)[] = []): Promise<void> {
    this.stopped = true;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all([...this.sending, ...also]), new Promise((resolve) => (timer = setTimeout(resolve, waitMs)))]);
    clearTimeout(timer);
  }

  private track(send: Promise<void>): void {
    this.sending.add(send);
    void send.finally(() => {
      this.sending.delete(send);
      this.wake();
    });
  }
}
