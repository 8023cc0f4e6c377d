// What a new box costs its PostgreSQL where the operator provisions it (operator/boxdb.ts), in a
// database of its own (BOXAUTH_OPERATOR_BOX_ISOLATION=Database) and in a schema of a shared one
// (Schema): the seconds of provisioning one (place and ensure as the Box controller calls them: its
// role, its database or schema, its migrations), the seconds of a bare CREATE DATABASE from
// template0 and the disk of such an empty database, and the disk a provisioned box takes (its own
// database; or what the shared database holds beyond an empty one, per box).
//
//   node dist/test/bench/box-database-cost.js [--boxes 20]
//
// On the benches' embedded PostgreSQL (.boxauth/bench-box-cost), or DATABASE_URL's server (a
// superuser). Prints one line of JSON; docs/performance.md quotes it.
import os from 'node:os';
import pg from 'pg';
import { createLogger } from '../../api/log.js';
import { PostgresBoxDatabases, type BoxAccess, type BoxIsolation } from '../../operator/boxdb.js';
import { benchServer, freshDatabase } from './database.js';

const log = (msg: string): void => {
  process.stderr.write(`box-database-cost: ${msg}\n`);
};
const BOXES = Number(process.argv[process.argv.indexOf('--boxes') + 1] || 20);
const EMPTY_DATABASES = 10;
const mib = (bytes: number): number => Math.round((bytes / 2 ** 20) * 100) / 100;

async function query<T extends pg.QueryResultRow>(url: string, text: string, params: unknown[] = []): Promise<T[]> {
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  try {
    return (await db.query<T>(text, params)).rows;
  } finally {
    await db.end();
  }
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** CREATE DATABASE … TEMPLATE template0, timed, its size read, and dropped again. */
async function emptyDatabases(serverUrl: string): Promise<{ createSeconds: number; sizeMiB: number }> {
  const seconds: number[] = [];
  let size = 0;
  for (let i = 0; i < EMPTY_DATABASES; i++) {
    const name = `boxcost_empty_${i}`;
    await query(serverUrl, `DROP DATABASE IF EXISTS ${name}`);
    const t0 = performance.now();
    await query(serverUrl, `CREATE DATABASE ${name} TEMPLATE template0`);
    seconds.push((performance.now() - t0) / 1000);
    size = Number((await query<{ s: string }>(serverUrl, 'SELECT pg_database_size($1) AS s', [name]))[0]!.s);
    await query(serverUrl, `DROP DATABASE ${name}`);
  }
  return { createSeconds: median(seconds), sizeMiB: mib(size) };
}

/** BOXES boxes provisioned one after another as the operator does: seconds each (median, max), and the disk they take. */
async function provisioned(
  serverUrl: string,
  isolation: BoxIsolation,
): Promise<{ secondsPerBox: number; maxSeconds: number; perBoxMiB: number }> {
  const adminUrl = await freshDatabase(serverUrl, `boxcost_${isolation.toLowerCase()}`);
  const databases = new PostgresBoxDatabases(createLogger('silent'));
  const accesses: [string, BoxAccess][] = [];
  const seconds: number[] = [];
  try {
    for (let i = 0; i < BOXES; i++) {
      const namespace = `cost-${i}`;
      const t0 = performance.now();
      const access: BoxAccess = {
        kind: 'role',
        adminUrl,
        password: 'a-box-password',
        place: await databases.place(namespace, adminUrl, isolation),
      };
      await databases.ensure(namespace, access);
      seconds.push((performance.now() - t0) / 1000);
      accesses.push([namespace, access]);
      await databases.forget(namespace);
    }
    const [row] = await query<{ own: string | null; shared: string }>(
      adminUrl,
      `SELECT (SELECT sum(pg_database_size(oid)) FROM pg_database
                WHERE shobj_description(oid, 'pg_database') = 'boxauth owner: box ' || datname || ' of database ' || current_database()) AS own,
              pg_database_size(current_database()) - pg_database_size('template0') AS shared`,
    );
    const bytes = Number(row!.own ?? 0) + Number(row!.shared);
    return { secondsPerBox: median(seconds), maxSeconds: Math.max(...seconds), perBoxMiB: mib(bytes / BOXES) };
  } finally {
    for (const [namespace, access] of accesses) await databases.drop(namespace, access);
    await databases.close();
    await query(serverUrl, `DROP DATABASE IF EXISTS boxcost_${isolation.toLowerCase()} WITH (FORCE)`);
  }
}

async function main(): Promise<void> {
  const server = await benchServer(log, { name: 'bench-box-cost' });
  try {
    const version = (await query<{ v: string }>(server.url, "SELECT current_setting('server_version') AS v"))[0]!.v;
    log(`PostgreSQL ${version}; ${BOXES} boxes in each mode, ${EMPTY_DATABASES} empty databases`);
    const empty = await emptyDatabases(server.url);
    log(`an empty database: ${JSON.stringify(empty)}`);
    const database = await provisioned(server.url, 'Database');
    log(`a database of its own: ${JSON.stringify(database)}`);
    const schema = await provisioned(server.url, 'Schema');
    log(`a schema of a shared database: ${JSON.stringify(schema)}`);
    const machine = `${os.availableParallelism()} cores, ${os.cpus()[0]?.model ?? '?'}`;
    process.stdout.write(
      `${JSON.stringify({ date: new Date().toISOString(), machine, postgres: version, boxes: BOXES, empty, database, schema })}\n`,
    );
  } finally {
    await server.stop();
  }
}

main().then(
  () => process.exit(0),
  (err: Error) => {
    process.stderr.write(`box-database-cost: ${err.stack ?? err.message}\n`);
    process.exit(1);
  },
);
