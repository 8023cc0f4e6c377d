// boxauth explain: why the decision point allowed or refused a request. With a
// decision id (from a gate's X-Boxauth-Decision header, or the audit log) it
// explains a refused decision the box kept; with --app and the request it replays
// one. Each policy of the app that applied is shown with what it said, and, when
// it did not allow, the failing matcho path or JSON Schema error.
import { OUTPUT, text, texts, usage, withBox, type Command, type CommandSpec } from '../command.js';
import { outputFormat, printed, printList, printRecord } from '../output.js';

const SPEC: CommandSpec = {
  name: 'explain',
  summary: 'why the decision point allowed or refused a request',
  synopsis: [
    'explain <decision-id>',
    'explain --app <app> [--method GET] [--path /x] [--host h]',
    '        [--token <access token> | --user <user id> | --client <client id>]',
    '        [--header name=value]...',
  ],
  about: `Explains a decision of the decision point: a refused one the box kept (by the id
a gateway answered with, X-Boxauth-Decision), or a request replayed now.`,
  options: {
    app: { type: 'string', usage: '--app <app>', summary: 'replay a request at this App' },
    method: { type: 'string', usage: '--method <method>', summary: "the request's method (default GET)" },
    path: { type: 'string', usage: '--path <path>', summary: "the request's path" },
    host: { type: 'string', usage: '--host <host>', summary: "the request's host" },
    token: { type: 'string', usage: '--token <access token>', summary: 'the request carries this access token' },
    user: { type: 'string', usage: '--user <user id>', summary: 'the request is made as this user' },
    client: { type: 'string', usage: '--client <client id>', summary: 'the request is made as this client' },
    header: { type: 'string', multiple: true, usage: '--header <name=value>', summary: 'a header of the request (repeatable)' },
    output: OUTPUT,
  },
  count: [0, 1],
};

interface Explanation {
  id: string;
  app: string | null;
  allowed: boolean;
  status: number;
  reason: string;
  policies: { id: string; verdict: string; why?: string }[];
  at?: string;
  cut?: string[];
}

export const explainCommand: Command = {
  spec: SPEC,
  async run(given, io) {
    const [id] = given.args;
    const names = ['app', 'method', 'path', 'host', 'token', 'user', 'client'] as const;
    const values = Object.fromEntries(names.map((name) => [name, text(given.values, name)])) as Record<
      (typeof names)[number],
      string | undefined
    >;
    if (!id && !values.app) throw usage('give a decision id, or --app and a request; see boxauth explain --help');
    if (id && values.app) throw usage('give a decision id, or --app and a request, not both');
    const format = outputFormat(given.values, io);
    const headers: Record<string, string> = {};
    for (const h of texts(given.values, 'header')) {
      const eq = h.indexOf('=');
      if (eq < 1) throw usage(`--header must be name=value (got "${h}")`);
      headers[h.slice(0, eq)] = h.slice(eq + 1);
    }
    return withBox(io, async (api) => {
      const explanation = id
        ? (await api.call<Explanation>('GET', `/authz/decisions/${encodeURIComponent(id)}`)).body
        : (
            await api.call<Explanation>('POST', '/authz/explain', {
              app: values.app,
              ...(values.method ? { method: values.method } : {}),
              ...(values.path ? { path: values.path } : {}),
              ...(values.host ? { host: values.host } : {}),
              ...(values.token ? { token: values.token } : {}),
              ...(values.user ? { user: values.user } : {}),
              ...(values.client ? { client: values.client } : {}),
              headers,
            })
          ).body;
      if (format !== 'table') return printRecord(io, format, explanation, []);
      io.out(
        printed`decision ${explanation.id}${explanation.at ? ` (${explanation.at})` : ''}: ${explanation.allowed ? 'allowed' : 'refused'} ` +
          printed`(${explanation.status}) at app ${explanation.app ?? '-'}: ${explanation.reason}\n\n`,
      );
      if (explanation.cut?.length)
        io.out(
          `The box kept an excerpt of this request, not all of it (${explanation.cut.join('; ')}):\n` +
            'its policies are shown with the verdicts given at the time, not evaluated again.\n\n',
        );
      if (!explanation.policies.length) return io.out('No policy of the app applied to this request: refused by default.\n');
      printList(io, 'table', explanation.policies, [
        { header: 'POLICY', cell: (p) => p.id },
        { header: 'VERDICT', cell: (p) => p.verdict },
        { header: 'WHY', cell: (p) => p.why },
      ]);
    });
  },
};
