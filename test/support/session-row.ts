// A session row as the store holds it, for tests that build one without the token path:
// a live client_credentials session of client `app`, holding a refresh token; `fields` change it.
import type { SessionRow } from '../../api/store/sessions.js';

export function sessionRow(fields: Partial<SessionRow> = {}): SessionRow {
  const id = fields.id ?? 's1';
  return {
    id,
    type: 'client_credentials',
    origin: 'client_credentials',
    clientId: 'app',
    userId: null,
    audience: null,
    scope: null,
    start: new Date(),
    exp: null,
    accessTokenHash: null,
    refreshTokenHash: Buffer.alloc(32),
    refreshTokenExp: null,
    refreshUsedAt: null,
    active: true,
    end: null,
    parent: null,
    family: id,
    kid: null,
    details: null,
    jkt: null,
    refreshJkt: null,
    x5t: null,
    ...fields,
  };
}
