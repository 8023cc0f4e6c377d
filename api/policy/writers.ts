// Who may write what grants rights: a write of an AccessPolicy, Client or App
// record through the box's API never grants more than the writer holds
// (docs/concepts/access-control.md, "Delegating records"). Whether one policy
// allows no more than another cannot be decided in general, so the rule is
// conservative: only a writer that `allow` policies alone allow everything on the
// box's API (unconditional) may write what reaches the box's API; any other writer
// only what reaches apps it may write. This check comes on top of the policy check
// of the request itself, and runs under the record-write lock
// (api/store/resources.ts withRecordWrites), so that what it reads stays as read
// until the write commits.
import type { Queryable } from '../db/pool.js';
import { apps, audienceOf, hostOf } from '../store/apps.js';
import { clients } from '../store/clients.js';
import { accessPolicies } from '../store/policies.js';
import type { AccessPolicy, App, Client } from '../types.js';

/** The writer, as the check needs it. */
export interface Writer {
  /** `allow` policies alone allow it everything on the box's API (PolicyIndex.unconditional). */
  unconditional: boolean;
  /** Its token speaks for a person (a person's token through a client). */
  forPerson: boolean;
  /** Whether the box's API's policies allow it `PUT /App/<app>` with `body` (the App as stored). */
  mayPutApp(app: string, body: Record<string, unknown>): Promise<boolean>;
}

/** One write: the record as stored before it (none: a create), and the one written (none: a delete). */
export type RecordWrite =
  | { kind: 'AccessPolicy'; id: string; stored: AccessPolicy | undefined; next: AccessPolicy | undefined }
  | { kind: 'Client'; id: string; stored: Client | undefined; next: Client | undefined }
  | { kind: 'App'; id: string; stored: App | undefined; next: App | undefined }
  | { kind: 'IdentityProvider'; id: string; stored: unknown; next: unknown }
  | { kind: 'Webhook'; id: string; stored: unknown; next: unknown }
  | { kind: 'Hook'; id: string; stored: unknown; next: unknown };

/** What the check reads, once per write. */
class Holdings {
  private readonly mayWrite = new Map<string, Promise<boolean>>();
  private allApps: Promise<App[]> | undefined;

  constructor(
    private readonly writer: Writer,
    readonly db: Queryable,
  ) {}

  /** Whether the writer may write App `app`: the policy check of PUT /App/<app>, with the App as stored. */
  mayWriteApp(app: string): Promise<boolean> {
    let answer = this.mayWrite.get(app);
    if (!answer) {
      answer = apps.read(this.db, app).then((stored) => {
        const { meta: _meta, ...body } = stored?.resource ?? { resourceType: 'App', id: app };
        return this.writer.mayPutApp(app, body);
      });
      this.mayWrite.set(app, answer);
    }
    return answer;
  }

  apps(): Promise<App[]> {
    return (this.allApps ??= apps.all(this.db).then((held) => held.map((h) => h.app)));
  }
}

/** Why `write` would grant more than `writer` holds, in words a person can act on; undefined when it would not. */
export async function writeRefusal(writer: Writer, db: Queryable, write: RecordWrite): Promise<string | undefined> {
  if (writer.unconditional) return undefined;
  const held = new Holdings(writer, db);
  switch (write.kind) {
    case 'AccessPolicy':
      return policyRefusal(held, [write.stored, write.next]);
    case 'Client':
      return clientRefusal(writer, held, write.id, [write.stored, write.next]);
    case 'App':
      return write.next && appRefusal(writer, held, write.next);
    case 'IdentityProvider':
      // A provider says who people are (one trusted for email signs in as whoever has it, an
      // administrator too): only a writer the box's API lets do everything may write one.
      return `IdentityProvider "${write.id}" decides who people are: only a writer that allow policies let do everything on the box's API may write one`;
    case 'Webhook':
      // A Webhook carries every person's events it subscribes to (who signs in, from where, their
      // addresses) out of the box: what only an administrator of the whole box may read.
      return `Webhook "${write.id}" sends every person's events out of the box: only a writer that allow policies let do everything on the box's API may write one`;
    case 'Hook':
      // A Hook is asked about every sign-in and token of the box, sees the person, and its answers
      // refuse people or add to their tokens: what only an administrator of the whole box may decide.
      return `Hook "${write.id}" is asked about every sign-in and token and adds to them: only a writer that allow policies let do everything on the box's API may write one`;
  }
}

const present = <T>(records: (T | undefined)[]): T[] => records.filter((r): r is T => r !== undefined);

async function policyRefusal(held: Holdings, records: (AccessPolicy | undefined)[]): Promise<string | undefined> {
  for (const policy of present(records)) {
    if (policy.app === undefined) {
      return `AccessPolicy "${policy.id}" guards the box's own API: only a writer that allow policies let do everything there may write one`;
    }
    if (!(await held.mayWriteApp(policy.app))) {
      return `AccessPolicy "${policy.id}" guards the App "${policy.app}", which this token may not write (PUT /App/${policy.app})`;
    }
  }
  return undefined;
}

async function clientRefusal(writer: Writer, held: Holdings, id: string, records: (Client | undefined)[]): Promise<string | undefined> {
  for (const link of await accessPolicies.linkingTo(held.db, 'Client', id)) {
    if (link.app === undefined) {
      return `Client "${id}" has rights on the box's own API (AccessPolicy "${link.id}" links to it): only a writer that allow policies let do everything there may write it`;
    }
    if (!(await held.mayWriteApp(link.app))) {
      return `Client "${id}" has rights at the App "${link.app}" (AccessPolicy "${link.id}" links to it), which this token may not write`;
    }
  }
  for (const client of present(records)) {
    const why = await clientRecordRefusal(writer, held, client);
    if (why) return `Client "${id}" ${why}`;
  }
  return undefined;
}

/** Why the writer may not write this client record (as written, or as stored), or undefined. */
async function clientRecordRefusal(writer: Writer, held: Holdings, client: Client): Promise<string | undefined> {
  if (client.first_party)
    return "is first_party (no consent page): only the box's own clients may be, written by a writer that allow policies let do everything";
  if (client.claims && Object.keys(client.claims).length) return SHAPES_CLAIMS;
  if (writer.forPerson && client.grant_types.includes('client_credentials')) {
    return "has client_credentials: a person's token may not make a client whose own tokens meet the box API's global policies";
  }
  if (!client.audience?.length) return 'needs an audience list naming the apps its tokens are for (without one it may ask for any)';
  const all = await held.apps();
  for (const audience of client.audience) {
    const app = all.find((a) => audienceOf(a) === audience);
    if (!app) return `may not ask for audience "${audience}": it is no App's`;
    if (!(await held.mayWriteApp(app.id)))
      return `may not ask for audience "${audience}": it is the App "${app.id}"'s, which this token may not write`;
  }
  return undefined;
}

/**
 * Shaped claims read everything the box holds of a person (their data, SCIM attributes, upstream
 * identities: the administrator's records, not the client's) and put it in tokens whatever the
 * scopes the person consented to: a delegate's client or app could carry off what no scope gives.
 */
const SHAPES_CLAIMS =
  'shapes claims (they read all the box holds of a person, whatever the scopes): only a writer that allow policies let do everything may write them';

async function appRefusal(writer: Writer, held: Holdings, app: App): Promise<string | undefined> {
  if (app.claims && Object.keys(app.claims).length) return `App "${app.id}" ${SHAPES_CLAIMS}`;
  const hosts = new Set(app.urls.map(hostOf));
  for (const other of await held.apps()) {
    if (other.id === app.id) continue;
    const shared = other.urls.map(hostOf).find((h) => hosts.has(h));
    if (shared && !(await held.mayWriteApp(other.id))) {
      return `App "${app.id}" may not claim ${shared}: the App "${other.id}" claims it, which this token may not write`;
    }
  }
  const client = app.signIn?.client;
  if (client !== undefined) {
    const stored = await clients.read(held.db, client);
    const why = await clientRefusal(writer, held, client, [stored?.resource]);
    if (why) return `App "${app.id}" may not sign people in through a client this token may not write: ${why}`;
  }
  return undefined;
}
