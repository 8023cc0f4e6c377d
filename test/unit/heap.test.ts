// The heap's growth the box asks of V8, and an operator's own setting winning over it.
import { expect } from 'chai';
import { heapFlags } from '../../api/heap.js';

describe('heap flags', function () {
  it('holds the heap to 1.5 × what lives in it', function () {
    expect(heapFlags([])).to.deep.equal(['--heap-growing-percent=50']);
    expect(heapFlags(['--enable-source-maps', '--max-old-space-size=256'])).to.deep.equal(['--heap-growing-percent=50']);
  });

  it("leaves an operator's own setting alone", function () {
    expect(heapFlags(['--heap-growing-percent=100'])).to.deep.equal([]);
    expect(heapFlags(['--heap_growing_percent=20'])).to.deep.equal([]);
  });
});
