// Webhooks (migration 032): the resource table (its signing secret sealed), the Webhooks an event
// is for, and the mark a receiver's 410 Gone leaves. What a Webhook is sent is api/webhooks/'s.
import type { Queryable } from '../db/pool.js';
import type { Webhook } from '../types.js';
import { ResourceTable, type Stored, type WriteOptions } from './resources.js';

class WebhookTable extends ResourceTable<Webhook> {
  /**
   * As every table writes; a write that changed the Webhook also clears a receiver's 410 Gone
   * (someone looked at it again: a new URL, other events), so that it is sent to again.
   */
  override async write(db: Queryable, webhook: Webhook, opts: WriteOptions): Promise<{ stored: Stored<Webhook>; created: boolean }> {
    const before = await this.read(db, webhook.id);
    const written = await super.write(db, webhook, opts);
    if (before && written.stored.resource.meta?.versionId !== before.resource.meta?.versionId) {
      await db.query('UPDATE webhooks SET gone_at = NULL WHERE id = $1 AND gone_at IS NOT NULL', [webhook.id]);
    }
    return written;
  }

  /** The ids of the Webhooks that subscribe to `type`: not disabled, and not Gone. */
  async subscribedTo(db: Queryable, type: string): Promise<string[]> {
    const { rows } = await db.query<{ id: string }>({
      name: 'webhooks-subscribed-to',
      text: `SELECT id FROM webhooks
               WHERE gone_at IS NULL AND resource->'events' ? $1 AND coalesce((resource->>'disabled')::boolean, false) = false
               ORDER BY id`,
      values: [type],
    });
    return rows.map((r) => r.id);
  }

  /** The receiver answered 410 Gone: no notice is made for this Webhook until it is changed. */
  async markGone(db: Queryable, id: string): Promise<void> {
    await db.query('UPDATE webhooks SET gone_at = now() WHERE id = $1 AND gone_at IS NULL', [id]);
  }
}

export const webhooks = new WebhookTable('webhooks', 'Webhook');
