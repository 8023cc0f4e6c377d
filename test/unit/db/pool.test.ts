// How the pool reads columns: a bytea value is a Buffer of its own, so that a
// cached row keeps its 32-byte digest alive, not the 8 KB slab it was parsed into.
import { expect } from 'chai';
import pg from 'pg';
import '../../../api/db/pool.js';

describe('pool column parsers', function () {
  const bytea = (text: string): Buffer => pg.types.getTypeParser(pg.types.builtins.BYTEA)(text) as Buffer;

  it('reads a bytea into memory of its own', function () {
    const digest = bytea(`\\x${'ab'.repeat(32)}`);
    expect(digest.equals(Buffer.alloc(32, 0xab))).to.equal(true);
    expect(digest.buffer.byteLength, 'the bytes it holds').to.equal(32);
  });

  it('reads the escape format too', function () {
    expect(bytea('a\\\\b\\001').equals(Buffer.from([0x61, 0x5c, 0x62, 0x01]))).to.equal(true);
  });
});
