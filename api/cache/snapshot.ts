// Something built from whole tables (every policy, every app, the workload bindings),
// kept in memory and built again after any change of those tables anywhere (the change
// feed), or read afresh at every use while the feed is lost (a change could not be heard
// of then). What was built when the feed was lost may answer while the database cannot
// (./memory.ts).
import type { ChangeFeed } from '../db/notify.js';
import { loadOrRemember } from './memory.js';

export class Snapshot<T> {
  private loading: Promise<T> | undefined;
  /** The value of `loading`, once it resolved, while no change has been heard since. */
  private current: T | undefined;
  /** `current` at the moment the feed was lost. */
  private remembered: T | undefined;

  constructor(
    private readonly feed: ChangeFeed,
    tables: string[],
    private readonly build: () => Promise<T>,
  ) {
    for (const table of tables) feed.onChange(table, () => this.forget());
    feed.onReset(() => {
      // Lost: keep what was current. Back: changes made meanwhile were never announced.
      this.remembered = feed.connected ? undefined : this.current;
      this.forget();
    });
  }

  /** Drops the built value; the next use builds it afresh. */
  forget(): void {
    this.loading = undefined;
    this.current = undefined;
  }

  get(): Promise<T> {
    if (!this.feed.connected) return loadOrRemember(this.feed, this.build, this.remembered);
    if (this.loading) return this.loading;
    const loading = this.build();
    this.loading = loading;
    loading.then(
      (value) => {
        if (this.loading === loading) this.current = value;
      },
      () => {
        if (this.loading === loading) this.loading = undefined;
      },
    );
    return loading;
  }
}
