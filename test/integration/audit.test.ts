// Audit events and the metrics Prometheus reads: what a log pipeline and a
// dashboard get from a box, and that no secret is ever among it.
import { expect } from 'chai';
import { Box, basic, boxForSuite, eventually } from '../support/box.js';
import { FormAgent } from '../support/form-agent.js';

describe('audit events and metrics', function () {
  this.timeout(60_000);
  let box: Box;
  let root: string;
  const secrets: string[] = [];

  boxForSuite((b, r) => {
    [box, root] = [b, r];
    secrets.push(box.rootSecret, root);
  });

  /** The audit lines written so far. */
  const auditLines = (): Record<string, any>[] =>
    box.logs.filter((l) => l.includes('"audit":true')).map((l) => JSON.parse(l) as Record<string, any>);
  const matching = (events: Record<string, any>[], event: string, match: Record<string, unknown>) =>
    events.find((e) => e.event === event && Object.entries(match).every(([k, v]) => JSON.stringify(e[k]) === JSON.stringify(v)));

  it('records who did what, never a secret', async function () {
    const { secret } = await box.addClient('auditee', { auth: { client_credentials: { refresh_token: true } } });
    secrets.push(secret);
    const issued = await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('auditee', secret) });
    secrets.push(issued.body.access_token, issued.body.refresh_token);
    await box.form('/auth/token', { grant_type: 'client_credentials' }, { Authorization: basic('auditee', 'wrong-secret-1') });
    const user = await box.json('POST', '/users', { email: 'aud@example.com', password: 'aud-password-1' }, root);
    secrets.push('aud-password-1');
    await new FormAgent(box).signIn('aud@example.com', 'aud-password-1');
    await new FormAgent(box).signIn('aud@example.com', 'not-the-password');
    secrets.push('not-the-password');
    await box.json('DELETE', '/Session', undefined, issued.body.access_token);
    await box.json('PUT', `/users/${user.body.id}`, { data: '{"name": "Aud"}' }, root);

    // Token events go through the access log stream (flushed at least every 100 ms), the rest at once:
    // the last line of each stream says the lines before it are there too.
    const events = await eventually('the audit lines of the last token refusal and the last change', async () => {
      const lines = auditLines();
      return (
        matching(lines, 'token_refused', { client: 'auditee' }) !== undefined &&
        matching(lines, 'record_changed', { kind: 'User', id: String(user.body.id), action: 'changed' }) !== undefined &&
        lines
      );
    });
    const find = (event: string, match: Record<string, unknown>) => matching(events, event, match);
    const rootSession = find('token_issued', { client: 'root', grant: 'client_credentials' });
    expect(rootSession, JSON.stringify(events)).to.not.equal(undefined);
    expect(find('record_changed', { kind: 'Client', id: 'auditee', action: 'created' })?.by).to.include({ client: 'root' });
    const auditeeToken = find('token_issued', { client: 'auditee', grant: 'client_credentials' });
    expect(auditeeToken?.session).to.be.a('string');
    expect(find('token_refused', { client: 'auditee', grant: 'client_credentials', error: 'invalid_client' })?.address).to.be.a('string');
    expect(find('record_changed', { kind: 'User', id: String(user.body.id), action: 'created' })).to.not.equal(undefined);
    expect(find('sign_in', { outcome: 'success', user: String(user.body.id) })).to.not.equal(undefined);
    expect(find('sign_in', { outcome: 'failure', reason: 'wrong password' })).to.not.equal(undefined);
    const closed = find('session_closed', { how: 'sign-out' });
    expect(closed?.sessions).to.include(auditeeToken!.session);
    expect(closed?.by).to.include({ client: 'auditee' });
    expect(find('record_changed', { kind: 'User', id: String(user.body.id), action: 'changed' })).to.not.equal(undefined);
    for (const line of box.logs) for (const s of secrets) expect(line, 'a secret in the log').not.to.include(s);
  });

  it("exports the metrics the chart's dashboard and alerts use, on the metrics port", async function () {
    const text = await box.metrics();
    for (const name of [
      'boxauth_token_duration_seconds_bucket{',
      'boxauth_refusals_total{',
      'boxauth_sign_ins_total{',
      'boxauth_group_commit_batch_size_bucket{',
      'boxauth_db_pool_waiting',
      'boxauth_db_pool_connections{',
      'boxauth_database_up',
      'boxauth_database_failovers',
      'boxauth_argon2_waiting{',
    ]) {
      expect(text, name).to.include(name);
    }
    expect(text).to.match(/boxauth_refusals_total\{[^}]*error="invalid_client"[^}]*\} [1-9]/);
    expect(text).to.match(/boxauth_sign_ins_total\{[^}]*result="failure"[^}]*\} [1-9]/);
  });
});
