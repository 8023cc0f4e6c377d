// What the box's processes send each other on the box's own channels (api/db/notify.ts): read
// fences, and wakes of the outboxes. Only the box's role can name those channels (migration 039).
import { BOX_CHANNEL_SQL } from '../db/notify.js';
import type { Queryable } from '../db/pool.js';

/**
 * The notification a read fence sends (api/cache/read-fence.ts), on the channel the tables'
 * triggers use (`channel`, the feed's), so that it is delivered in commit order with them.
 */
export async function sendFence(db: Queryable, channel: string, token: string): Promise<void> {
  await db.query({ name: 'send-fence', text: 'SELECT pg_notify($1, $2)', values: [channel, JSON.stringify({ fence: token })] });
}

/**
 * Tells the box's processes that notices of `kind` wait (at the commit of `db`'s transaction):
 * their feeds hear it (ChangeFeed.onNotice).
 */
export async function wake(db: Queryable, kind: string): Promise<void> {
  await db.query(`SELECT pg_notify(${BOX_CHANNEL_SQL} || '_' || $1, '')`, [kind]);
}
