// The box itself from the shell: boxauth keys (its signing keys, GET /keys), boxauth keys rotate
// (POST /keys/rotate: a new key signs, the one it replaces stays published while its tokens live)
// and boxauth settings (its effective configuration, GET /settings: never a secret).
import { OUTPUT, text, withBox, type Command, type CommandSpec } from '../command.js';
import { outputFormat, printed, printList, printRecord, type Column } from '../output.js';

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

const KEYS_SPEC: CommandSpec = {
  name: 'keys',
  aliases: ['key'],
  summary: "the box's signing keys: list, rotate",
  synopsis: ['keys [list] [-o table|json|yaml]', 'keys rotate [--alg ES256|RS256|EdDSA]'],
  about: `The keys that sign the box's JWTs (access tokens and ID tokens), newest first:
which one signs for each algorithm (active), and which no longer sign but are
still published at /.well-known/jwks.json (retired), until when at the earliest.`,
  options: {
    alg: {
      type: 'string',
      usage: '--alg ES256|RS256|EdDSA',
      summary: "the algorithm (default: the access tokens')",
      values: ['ES256', 'RS256', 'EdDSA'],
    },
    output: OUTPUT,
  },
  verbs: {
    list: { summary: 'every key (the default)', options: ['output'] },
    rotate: {
      summary:
        'a new key signs from now on; the key it replaces is retired and stays published while tokens it signed may live (at least a day, the longest an ID token lives), so they keep working everywhere',
      options: ['alg', 'output'],
    },
  },
  defaultVerb: 'list',
};

export const keysCommand: Command = {
  spec: KEYS_SPEC,
  async run({ verb, values }, io) {
    const format = outputFormat(values, io);
    if (verb === 'list') {
      return withBox(io, async (api) =>
        printList(io, format, (await api.call<{ keys: KeyRecord[] }>('GET', '/keys')).body.keys, KEY_COLUMNS),
      );
    }
    return withBox(io, async (api) => {
      const alg = text(values, 'alg');
      const body = alg !== undefined ? { alg } : {};
      const answer = (
        await api.call<{ rotated: { alg: string; kid: string; retired: string[] }; keys: KeyRecord[] }>('POST', '/keys/rotate', body)
      ).body;
      if (format !== 'table') return printRecord(io, format, answer, []);
      const { kid, retired } = answer.rotated;
      io.out(
        printed`Rotated the ${answer.rotated.alg} key of box "${await api.boxName()}": ${kid} signs from now on` +
          (retired.length
            ? printed`; ${retired.join(', ')} no longer signs and stays published while tokens it signed may live.\n`
            : '.\n'),
      );
    });
  },
};

const SETTINGS_SPEC: CommandSpec = {
  name: 'settings',
  summary: "the box's effective configuration (never a secret)",
  synopsis: ['settings [-o json|yaml]'],
  about: `The box's effective configuration, as it started: its issuer, token and session
lifetimes, registration, mail server and sender, what it trusts, what it keeps
and for how long. Never a secret (no password, key or database credentials).`,
  options: { output: { ...OUTPUT, usage: '-o, --output json|yaml', summary: 'YAML on a terminal, else JSON', values: ['json', 'yaml'] } },
};

export const settingsCommand: Command = {
  spec: SETTINGS_SPEC,
  async run({ values }, io) {
    const chosen = outputFormat(values, io);
    // Nested by topic: no table says it better than YAML.
    const format = chosen === 'table' ? 'yaml' : chosen;
    return withBox(io, async (api) => printRecord(io, format, (await api.call<Record<string, unknown>>('GET', '/settings')).body, []));
  },
};
