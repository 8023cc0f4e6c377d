// A statement's span is named by its operation and table, read from keywords and names only.
import { expect } from 'chai';
import { summarizeStatement } from '../../../api/db/statement-summary.js';

describe("a statement's summary (its span's name)", function () {
  it('is its operation and first table', function () {
    expect(summarizeStatement('INSERT INTO sessions (id, token_hash) SELECT * FROM unnest($1::bytea[])')).to.deep.equal({
      operation: 'INSERT',
      table: 'sessions',
    });
    expect(summarizeStatement('UPDATE sessions SET used_at = now() WHERE id = $1')).to.deep.equal({
      operation: 'UPDATE',
      table: 'sessions',
    });
    expect(summarizeStatement('DELETE FROM box_a.codes WHERE digest = $1')).to.deep.equal({ operation: 'DELETE', table: 'box_a.codes' });
    expect(summarizeStatement('BEGIN')).to.deep.equal({ operation: 'BEGIN' });
  });

  it('names a statement WITH expressions by its main statement', function () {
    const text = 'WITH spent AS (INSERT INTO dpop_proofs (digest) VALUES ($1) RETURNING 1) INSERT INTO sessions (id) SELECT id FROM spent';
    expect(summarizeStatement(text)).to.deep.equal({ operation: 'INSERT', table: 'sessions' });
  });

  it('never takes a literal, a quoted name, a function or a subquery for a table', function () {
    expect(summarizeStatement("-- who\nSELECT * FROM users WHERE email = 'FROM secret'")).to.deep.equal({
      operation: 'SELECT',
      table: 'users',
    });
    expect(summarizeStatement("SELECT 'INTO code-123' AS x")).to.deep.equal({ operation: 'SELECT' });
    expect(summarizeStatement('SELECT * FROM unnest($1::text[]) AS t')).to.deep.equal({ operation: 'SELECT' });
    expect(summarizeStatement('SELECT * FROM (SELECT 1 FROM keys) k')).to.deep.equal({ operation: 'SELECT' });
  });
});
