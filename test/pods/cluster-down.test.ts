// `make cluster-down` starts afresh, as `kind delete cluster` does (issue 81 item 11): the next
// `make cluster-up` in the same checkout used to bring back the last cluster's objects from the
// etcd data it kept, and a `helm install` then failed on "namespaces boxauth-system already exists".
import { expect } from 'chai';
import fs from 'node:fs';
import path from 'node:path';
import { projectPath } from '../../api/paths.js';
import { PodCluster } from '../support/pod-cluster.js';

describe('make cluster-down: the next cluster-up starts an empty cluster (issue 81)', function () {
  this.timeout(10 * 60_000);
  const dir = projectPath('.boxauth', 'e2e-cluster-down');
  // A free host port unless one is given (each start may take another).
  const port = process.env.BOXAUTH_CLUSTER_PORT ? Number(process.env.BOXAUTH_CLUSTER_PORT) : undefined;
  let cluster: PodCluster | undefined;

  after(async function () {
    await cluster?.stop();
  });

  const namespaces = async (c: PodCluster): Promise<string[]> =>
    ((await c.json<{ items: { metadata: { name: string } }[] }>(['get', 'namespaces'])).items ?? []).map((n) => n.metadata.name);

  it("removes the cluster's objects by default, and keeps them with --keep-objects", async function () {
    cluster = await PodCluster.start({ dir, port, images: [] });
    await cluster.k(['create', 'namespace', 'boxauth-system']);
    await cluster.stop(true); // scripts/cluster-down.sh, as make cluster-down runs it
    expect(fs.existsSync(path.join(dir, 'etcd')), "etcd's data").to.equal(false);
    cluster = await PodCluster.start({ dir, port, images: [], wipe: false });
    expect(await namespaces(cluster)).to.not.include('boxauth-system');
    await cluster.k(['create', 'namespace', 'kept']);
    await cluster.stop(true, ['--keep-objects']);
    cluster = await PodCluster.start({ dir, port, images: [], wipe: false });
    expect(await namespaces(cluster)).to.include('kept');
  });
});
