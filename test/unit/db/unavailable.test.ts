// Which errors mean "the database cannot answer now" (503 with Retry-After), not a bug (500).
import { expect } from 'chai';
import { isDatabaseUnavailable } from '../../../api/db/unavailable.js';

const pgError = (code: string, message = 'x'): Error => Object.assign(new Error(message), { code });

describe('isDatabaseUnavailable', function () {
  it('a pool checkout timeout, a lost or refused connection, too many connections', function () {
    expect(isDatabaseUnavailable(new Error('timeout exceeded when trying to connect'))).to.equal(true);
    expect(isDatabaseUnavailable(new Error('Connection terminated unexpectedly'))).to.equal(true);
    expect(isDatabaseUnavailable(pgError('ECONNREFUSED'))).to.equal(true);
    expect(isDatabaseUnavailable(pgError('53300', 'sorry, too many clients already'))).to.equal(true);
  });

  it("the database's own timeouts and exhausted resources under load: statement_timeout, lock_timeout, memory, ports", function () {
    expect(isDatabaseUnavailable(pgError('57014', 'canceling statement due to statement timeout'))).to.equal(true);
    expect(isDatabaseUnavailable(pgError('55P03', 'canceling statement due to lock timeout'))).to.equal(true);
    expect(isDatabaseUnavailable(pgError('53200', 'out of memory'))).to.equal(true);
    expect(isDatabaseUnavailable(pgError('EADDRNOTAVAIL'))).to.equal(true);
    expect(isDatabaseUnavailable(new Error('wrapped', { cause: pgError('57014') }))).to.equal(true);
  });

  it('a query the database refused is not: a constraint, a syntax error, a deadlock', function () {
    expect(isDatabaseUnavailable(pgError('23505'))).to.equal(false);
    expect(isDatabaseUnavailable(pgError('42601'))).to.equal(false);
    expect(isDatabaseUnavailable(pgError('40P01'))).to.equal(false);
    expect(isDatabaseUnavailable(new Error('something else'))).to.equal(false);
  });
});
