// JSON-lines logger. Tokens, secrets and passwords never reach a log line: known
// field names are censored by pino, and URLs are logged without their query string
// values for credential-bearing parameters.
import { pino, type Logger } from 'pino';

export type { Logger };

const SECRET_FIELDS = [
  'password', 'secret', 'client_secret', 'access_token', 'refresh_token', 'token', 'code',
  'code_verifier', 'client_assertion', 'authorization', 'cookie', 'privateKey', 'signingKeyPem',
];

export function createLogger(level: string, base: Record<string, unknown> = {}): Logger {
  return pino({
    level,
    base: { ...base, pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
    redact: {
      paths: [...SECRET_FIELDS, ...SECRET_FIELDS.map((f) => `*.${f}`), 'req.headers.authorization', 'req.headers.cookie'],
      censor: '[redacted]',
    },
  });
}

const CREDENTIAL_PARAMS = /([?&](?:access_token|refresh_token|code|client_secret|token|state|code_verifier)=)[^&#]*/gi;

/** The URL as it may be logged: credential-bearing query values replaced. */
export function redactUrl(url: string): string {
  return url.replace(CREDENTIAL_PARAMS, '$1[redacted]');
}
