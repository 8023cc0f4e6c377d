import { expect } from 'chai';
import { rowMayCause } from '../../../api/store/constraints.js';

describe('rowMayCause: whether a group commit retries a failed batch row by row', function () {
  it('yes for what a row can cause: a value, a constraint, a limit, a deadlock over some rows', function () {
    for (const code of ['22021', '22P05', '23505', '23503', '21000', '54000', '40P01']) {
      expect(rowMayCause(Object.assign(new Error(code), { code })), code).to.equal(true);
    }
  });

  it("no for the server's or the statement's own failures: each row alone would fail again, after its own wait", function () {
    // lost connection, too many connections, shutdown, I/O error, internal error; a missing column or
    // table or privilege (a bad deploy); a prepared statement gone; no SQLSTATE at all (a pool timeout).
    for (const code of ['08006', '53300', '57P01', '58030', 'XX000', '42703', '42P01', '42501', '26000', undefined, 'ECONNREFUSED']) {
      expect(rowMayCause(Object.assign(new Error(String(code)), { code })), String(code)).to.equal(false);
    }
    expect(rowMayCause('not an error')).to.equal(false);
  });
});
