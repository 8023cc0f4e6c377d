// The notification a read fence sends (api/cache/read-fence.ts), on the channel
// the tables' triggers use, so that it is delivered in commit order with them.
import type { Queryable } from '../db/pool.js';

export async function sendFence(db: Queryable, schema: string, token: string): Promise<void> {
  await db.query({ name: 'send-fence', text: "SELECT pg_notify('boxauth', $1)", values: [JSON.stringify({ schema, fence: token })] });
}
