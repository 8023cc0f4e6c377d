// boxauth events: the box's audit trail (GET /AuditEvent, docs/operations/audit.md), newest
// first, with the API's filters; --follow then prints each new event as it comes, as
// `kubectl get -w` does. Everything the box said goes through printable (./output.ts): an
// event holds names people chose.
import type { AuditEventResource as AuditEvent } from '../../audit.js';
import { TRAIL_KINDS } from '../../record-kinds.js';
import type { BoxApi } from '../api.js';
import { flag, OUTPUT, text, usage, withBox, type Command, type CommandSpec, type Io, type OptionSpec } from '../command.js';
import { findUser } from '../lookup.js';
import { jsonText, outputFormat, printList, printable, type Column, type OutputFormat } from '../output.js';

const filter = (usage: string, summary: string): OptionSpec => ({ type: 'string', usage, summary });

const SPEC: CommandSpec = {
  name: 'events',
  aliases: ['event'],
  summary: "the box's audit trail: who did what, and when (--follow for what comes)",
  synopsis: ['events [filters] [--limit N] [--follow]'],
  about: `The box's audit trail, newest first: who changed which record and how, sign-ins,
sessions ended, second factors, accounts turned off or on, decisions refused at a
gate. You see the events about what your policies let you read.`,
  options: {
    actor: filter('--actor <id>', 'who acted: a user id or a client id'),
    user: filter('--user <id|email>', 'the person the event concerns'),
    client: filter('--client <id>', 'the client the event concerns'),
    type: {
      ...filter('--type <kind>', `the record's kind: ${TRAIL_KINDS.join(', ')}`),
      values: TRAIL_KINDS,
    },
    id: filter('--id <id>', "the record's id (with --type)"),
    event: {
      ...filter('--event <name>', 'sign_in, session_closed, decision, factor, upstream, account, record_changed, api_refused, left_out'),
      values: ['sign_in', 'session_closed', 'decision', 'factor', 'upstream', 'account', 'record_changed', 'api_refused', 'left_out'],
    },
    outcome: { ...filter('--outcome <o>', 'success or failure'), values: ['success', 'failure'] },
    since: filter('--since <time>', 'from this time: ISO 8601 (2026-11-26T10:00:00Z), or a while ago (30s, 10m, 2h, 7d)'),
    until: filter('--until <time>', 'before this time, the same way'),
    limit: filter('--limit <n>', 'at most this many events (1-1000; default 50)'),
    follow: {
      type: 'boolean',
      short: 'f',
      summary: 'then print each new event as it is recorded, until interrupted (Ctrl-C); with -o json, one JSON object a line',
    },
    output: OUTPUT,
  },
};

interface Page {
  entry: { resource: AuditEvent }[];
  link: { relation: string; url: string }[];
  last?: string;
}

const COLUMNS: Column<AuditEvent>[] = [
  { header: 'TIME', cell: (e) => e.at },
  { header: 'EVENT', cell: (e) => e.event },
  { header: 'ACTION', cell: (e) => e.action },
  { header: 'OUTCOME', cell: (e) => e.outcome },
  { header: 'ACTOR', cell: (e) => (e.actor.user ? `user ${e.actor.user}` : e.actor.client ? `client ${e.actor.client}` : '') },
  // Whom a refused decision was about: who called (ACTOR) is not always whom it asked about (an AuthZEN PEP names a subject).
  {
    header: 'SUBJECT',
    cell: (e) => (e.subject?.user ? `user ${e.subject.user}` : e.subject?.client ? `client ${e.subject.client}` : ''),
  },
  { header: 'USER', cell: (e) => e.user },
  { header: 'RECORD', cell: (e) => (e.resource ? `${e.resource.type}/${e.resource.id}` : e.client ? `Client/${e.client}` : '') },
  { header: 'ID', cell: (e) => e.id },
];

const AGO = /^(\d+)(s|m|h|d)$/;
const SECONDS = { s: 1, m: 60, h: 3600, d: 86400 } as const;

/** A time as the API takes it: ISO 8601 as given, or `10m` as the time ten minutes ago. */
export function timeArgument(name: string, value: string, now = Date.now()): string {
  const ago = AGO.exec(value);
  if (ago) return new Date(now - Number(ago[1]) * SECONDS[ago[2] as keyof typeof SECONDS] * 1000).toISOString();
  if (/^\d{4}-\d{2}-\d{2}/.test(value) && !Number.isNaN(new Date(value).getTime())) return value;
  throw usage(`--${name} must be a time (2026-11-26T10:00:00Z) or a while ago (30s, 10m, 2h, 7d), not "${printable(value)}"`);
}

/** One line per event, for --follow: the table's columns, or the event as JSON or YAML. */
function printEach(io: Io, format: OutputFormat, events: AuditEvent[]): void {
  if (format === 'json') for (const e of events) io.out(`${jsonText(e)}\n`);
  else if (format === 'yaml') for (const e of events) printList(io, 'yaml', [e], COLUMNS);
  else for (const e of events) io.out(`${COLUMNS.map((c) => printable(String(c.cell(e) ?? ''))).join('  ')}\n`);
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Prints each event newer than `after` as it is recorded, oldest first, until the process is stopped. */
async function follow(api: BoxApi, io: Io, format: OutputFormat, filters: URLSearchParams, after: string, everyMs: number): Promise<never> {
  for (;;) {
    const query = new URLSearchParams(filters);
    query.set('_after', after);
    query.set('_count', '1000');
    const page = (await api.call<Page>('GET', `/AuditEvent?${query}`)).body;
    printEach(
      io,
      format,
      page.entry.map((e) => e.resource),
    );
    after = page.last ?? after;
    if (page.entry.length < 1000) await sleep(everyMs);
  }
}

export const eventsCommand: Command = {
  spec: SPEC,
  async run(given, io) {
    const option = (name: string): string | undefined => text(given.values, name);
    const values = {
      outcome: option('outcome'),
      id: option('id'),
      type: option('type'),
      since: option('since'),
      until: option('until'),
      user: option('user'),
      follow: flag(given.values, 'follow'),
    };
    const limit = option('limit') ?? '50';
    if (!/^\d+$/.test(limit) || Number(limit) < 1 || Number(limit) > 1000) throw usage('--limit must be 1 to 1000');
    if (values.outcome !== undefined && values.outcome !== 'success' && values.outcome !== 'failure')
      throw usage('--outcome must be success or failure');
    if (values.id !== undefined && values.type === undefined) throw usage('--id needs --type (the kind of record: App, Client…)');
    const format = outputFormat(given.values, io);
    const filters = new URLSearchParams();
    for (const [name, param] of [
      ['actor', 'actor'],
      ['client', 'client'],
      ['type', 'resource_type'],
      ['id', 'resource_id'],
      ['event', 'event'],
      ['outcome', 'outcome'],
    ] as const) {
      const value = option(name);
      if (value !== undefined) filters.set(param, value);
    }
    if (values.since !== undefined) filters.set('since', timeArgument('since', values.since));
    if (values.until !== undefined) filters.set('until', timeArgument('until', values.until));
    return withBox(io, async (api) => {
      if (values.user !== undefined) filters.set('user', String((await findUser(api, values.user)).id));
      const query = new URLSearchParams(filters);
      query.set('_count', limit);
      const events = (await api.call<Page>('GET', `/AuditEvent?${query}`)).body.entry.map((e) => e.resource);
      if (!values.follow) return printList(io, format, events, COLUMNS);
      // As kubectl get -w: what there is, oldest first, then what comes.
      const shown = [...events].reverse();
      if (format === 'table') io.out(`${COLUMNS.map((c) => c.header).join('  ')}\n`);
      printEach(io, format, shown);
      const newest = events[0]?.id ?? (await newestId(api));
      await follow(api, io, format, filters, newest, 1000);
    });
  },
};

/** The id the trail has reached, for a --follow that found no event to start from: what comes next is newer. */
async function newestId(api: BoxApi): Promise<string> {
  const [newest] = (await api.call<Page>('GET', '/AuditEvent?_count=1')).body.entry;
  return newest?.resource.id ?? '0';
}
