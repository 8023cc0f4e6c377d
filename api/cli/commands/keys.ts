// The box itself from the shell: boxauth keys (its signing keys, GET /keys), boxauth keys rotate
// (POST /keys/rotate: a new key signs, the one it replaces stays published while its tokens live)
// and boxauth settings (its effective configuration, GET /settings: never a secret).
import { parse, usage, withBox, type Command } from '../command.js';
import { outputHelp, OUTPUT_OPTION, outputFormat, printed, printList, printRecord, type Column } from '../output.js';

/** A key as GET /keys shows it (never its private half). */
interface KeyRecord {
  kid: string;
  alg: string;
  state: 'active' | 'retired';
  signs: string[];
  external: boolean;
  created_at: string;
  retired_at: string | null;
  rotates_at: string | null;
  published_until: string | null;
}

const KEY_COLUMNS: Column<KeyRecord>[] = [
  { header: 'KID', cell: (k) => k.kid },
  { header: 'ALG', cell: (k) => k.alg },
  { header: 'STATE', cell: (k) => k.state + (k.external ? ' (BOXAUTH_SIGNING_KEY)' : '') },
  { header: 'SIGNS', cell: (k) => k.signs },
  { header: 'CREATED', cell: (k) => k.created_at },
  { header: 'ROTATES', cell: (k) => k.rotates_at },
  { header: 'RETIRED', cell: (k) => k.retired_at },
  // A retired key a token without expiry still needs has no date: it stays while that token lives.
  { header: 'PUBLISHED_UNTIL', cell: (k) => (k.state === 'active' ? '' : (k.published_until ?? 'while its tokens live')) },
];

const KEYS_HELP = `Usage: boxauth keys [list] [-o table|json|yaml]
       boxauth keys rotate [--alg ES256|RS256|EdDSA]

The keys that sign the box's JWTs (access tokens and ID tokens), newest first:
which one signs for each algorithm (active), and which no longer sign but are
still published at /.well-known/jwks.json (retired), until when at the earliest.

Subcommands:
  list      every key (the default)
  rotate    a new key signs from now on; the key it replaces is retired and stays
            published while tokens it signed may live (at least a day, the
            longest an ID token lives), so they keep working everywhere

Options:
  --alg ES256|RS256|EdDSA       rotate: the algorithm (default: the access tokens')
${outputHelp(33, 'list and rotate')}
`;

export const keysCommand: Command = {
  name: 'keys',
  summary: "the box's signing keys: list, rotate",
  help: KEYS_HELP,
  async run(args, io) {
    const { values, positionals } = parse(args, { alg: { type: 'string' }, ...OUTPUT_OPTION, help: { type: 'boolean', short: 'h' } });
    const [sub = 'list', ...rest] = positionals;
    if (values.help || sub === 'help') return io.out(KEYS_HELP);
    if (rest.length) throw usage(`unexpected argument "${rest[0]}"`);
    const format = outputFormat(values.output, io);
    if (sub === 'list') {
      if (values.alg !== undefined) throw usage('--alg goes with rotate');
      return withBox(io, async (api) =>
        printList(io, format, (await api.call<{ keys: KeyRecord[] }>('GET', '/keys')).body.keys, KEY_COLUMNS),
      );
    }
    if (sub !== 'rotate') throw usage(`unknown subcommand "${sub}"; run boxauth keys help`);
    return withBox(io, async (api) => {
      const body = values.alg !== undefined ? { alg: values.alg } : {};
      const answer = (
        await api.call<{ rotated: { alg: string; kid: string; retired: string[] }; keys: KeyRecord[] }>('POST', '/keys/rotate', body)
      ).body;
      if (format !== 'table') return printRecord(io, format, answer, []);
      const { alg, kid, retired } = answer.rotated;
      io.out(
        printed`Rotated the ${alg} key of box "${await api.boxName()}": ${kid} signs from now on` +
          (retired.length
            ? printed`; ${retired.join(', ')} no longer signs and stays published while tokens it signed may live.\n`
            : '.\n'),
      );
    });
  },
};

const SETTINGS_HELP = `Usage: boxauth settings [-o json|yaml]

The box's effective configuration, as it started: its issuer, token and session
lifetimes, registration, mail server and sender, what it trusts, what it keeps
and for how long. Never a secret (no password, key or database credentials).

Options:
  -o, --output json|yaml        YAML on a terminal, else JSON
`;

export const settingsCommand: Command = {
  name: 'settings',
  summary: "the box's effective configuration (never a secret)",
  help: SETTINGS_HELP,
  async run(args, io) {
    const { values, positionals } = parse(args, { ...OUTPUT_OPTION, help: { type: 'boolean', short: 'h' } });
    if (values.help || positionals[0] === 'help') return io.out(SETTINGS_HELP);
    if (positionals.length) throw usage(`unexpected argument "${positionals[0]}"`);
    const chosen = outputFormat(values.output, io);
    // Nested by topic: no table says it better than YAML.
    const format = chosen === 'table' ? 'yaml' : chosen;
    return withBox(io, async (api) => printRecord(io, format, (await api.call<Record<string, unknown>>('GET', '/settings')).body, []));
  },
};
