// The floors of api/ as eslint.config.js keeps them (api/README.md): a climb, a
// peer's internals or the composition root imported from below is a lint error;
// what the floors allow is not. Only the floor rules run here, over source text
// given a path, so the test needs no type information and no file on disk.
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { expect } from 'chai';
import { Linter } from 'eslint';

const { floors } = (await import(pathToFileURL(path.resolve('eslint.config.js')).href)) as { floors: Linter.Config[] };

function refused(file: string, from: string): boolean {
  const messages = new Linter({ cwd: process.cwd() }).verify(`import { x } from '${from}';\nexport { x };\n`, floors, path.resolve(file));
  return messages.some((m) => m.ruleId === 'no-restricted-imports');
}

describe('the floors of api/ (eslint.config.js)', function () {
  it('refuses a climb: the decision point into a door, the store into policy, the base into credentials', function () {
    expect(refused('api/decision/engine.ts', '../http/browser-session.js')).to.equal(true);
    expect(refused('api/decision/record.ts', '../ui/pages.js')).to.equal(true);
    expect(refused('api/store/decisions.ts', '../policy/evaluate.js')).to.equal(true);
    expect(refused('api/audit.ts', './credentials/closing.js')).to.equal(true);
    expect(refused('api/credentials/dpop/check.ts', '../../oauth/errors.js')).to.equal(true);
    expect(refused('api/db/embedded.ts', '../http/listen.js')).to.equal(true);
  });

  it('refuses a peer: oauth, decision and people import none of each other (but people/sign-in.ts)', function () {
    expect(refused('api/decision/engine.ts', '../oauth/openid.js')).to.equal(true);
    expect(refused('api/people/accounts.ts', '../oauth/authorization-request.js')).to.equal(true);
    expect(refused('api/oauth/grants/grant.ts', '../../people/attempts.js')).to.equal(true);
    expect(refused('api/oauth/interaction.ts', '../people/sign-in.js')).to.equal(false);
  });

  it('refuses the composition root below it, and operator/ anywhere in api/', function () {
    expect(refused('api/oauth/token-endpoint.ts', '../services.js')).to.equal(true);
    expect(refused('api/http/routes/sign-in.ts', '../../server.js')).to.equal(true);
    expect(refused('api/http/app.ts', '../services.js')).to.equal(false);
    expect(refused('api/store/users.ts', '../../operator/kube.js')).to.equal(true);
  });

  it('puts mail between credentials and the peers: people and jobs send it, credentials and the store do not', function () {
    expect(refused('api/credentials/tokens.ts', '../mail/outbox.js')).to.equal(true);
    expect(refused('api/store/mail-outbox.ts', '../mail/templates.js')).to.equal(true);
    expect(refused('api/mail/outbox.ts', '../people/links.js')).to.equal(true);
    expect(refused('api/mail/outbox.ts', '../http/app.js')).to.equal(true);
    expect(refused('api/mail/messages.ts', '../credentials/tokens.js')).to.equal(false);
    expect(refused('api/mail/messages.ts', '../store/users.js')).to.equal(false);
    expect(refused('api/people/links.ts', '../mail/outbox.js')).to.equal(false);
    expect(refused('api/jobs/purge.ts', '../mail/outbox.js')).to.equal(false);
  });

  it('lets each floor stand on the ones below it', function () {
    expect(refused('api/http/routes/authorization-endpoint.ts', '../../oauth/interaction.js')).to.equal(false);
    expect(refused('api/grpc/check.ts', '../http/refusal.js')).to.equal(false);
    expect(refused('api/decision/engine.ts', '../credentials/dpop/resource.js')).to.equal(false);
    expect(refused('api/credentials/closing.ts', '../store/sessions.js')).to.equal(false);
    expect(refused('api/store/sessions.ts', '../db/pool.js')).to.equal(false);
    expect(refused('api/cli/kube/loopback.ts', '../../credentials/pkce.js')).to.equal(false);
  });
});
