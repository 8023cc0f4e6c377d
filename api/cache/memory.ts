// What a cache may answer while the database cannot: the value it held when the change
// feed was lost, for as long as the feed allows (ChangeFeed.mayAnswerFromMemory). A read
// goes to the database first every time; only when the database is unreachable does the
// remembered value stand in, so that a token known a moment ago is still known, while a
// change made through a database that can be reached is never hidden by it.
import type { ChangeFeed } from '../db/notify.js';
import { isDatabaseUnavailable } from '../db/unavailable.js';

/** `load()`, or — when it fails because the database is unreachable — `remembered`, if the feed allows it. */
export async function loadOrRemember<V>(feed: ChangeFeed, load: () => Promise<V>, remembered: V | undefined): Promise<V> {
  try {
    return await load();
  } catch (err) {
    if (remembered !== undefined && isDatabaseUnavailable(err) && feed.mayAnswerFromMemory()) return remembered;
    throw err;
  }
}
