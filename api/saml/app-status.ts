// A SAML app's status, of its metadata at a URL (Client.saml.metadata.url): the box records the
// outcome of every fetch of it (./service-providers.ts) in the database
// (api/store/saml-metadata-status.ts), and looks on its own when an app with a URL appears or
// changes and when the record is older than the document's caching time, so that the operator's
// SamlMetadataReady condition and the admin console tell of a broken URL before anybody signs in.
// Of a box's processes and replicas one looks (the work is claimed in one statement). A busy
// schema check (SamlBusy) is no outcome: the claim is given up and taken again at the next pass.
import type { ChangeFeed } from '../db/notify.js';
import type { Pool } from '../db/pool.js';
import type { Logger } from '../log.js';
import { clients } from '../store/clients.js';
import {
  claimSamlMetadataChecks,
  releaseSamlMetadataClaim,
  samlMetadataStatus,
  type SamlMetadataStatus,
  type SamlMetadataSummary,
} from '../store/saml-metadata-status.js';
import type { Client } from '../types.js';
import { idpEndpoints } from './idp-metadata.js';
import { metadataSummary } from './metadata-status.js';
import { readSpMetadata, type ServiceProviders } from './service-providers.js';
import { SamlRefusal } from './xml.js';

/** How long a process has to fetch and read what it claimed before another may. */
const LEASE_SECONDS = 60;
/** How often each process asks whether there is work (one cheap statement). */
const PASS_EVERY_MS = 10_000;

interface Needs {
  pool: Pool;
  feed: ChangeFeed;
  log: Logger;
  serviceProviders: ServiceProviders;
}

/**
 * Looks at the metadata of the apps this process claims: now, at every change of a client, and
 * every PASS_EVERY_MS. Returns what stops it (waiting for a pass in progress).
 */
export function watchSamlMetadata(svc: Needs): () => Promise<void> {
  let running: Promise<void> | undefined;
  let again = false;
  let stopped = false;
  const pass = async (): Promise<void> => {
    for (const id of await claimSamlMetadataChecks(svc.pool, LEASE_SECONDS)) {
      // Stopping: what is claimed and not looked at is given up, for another process at once.
      const client = stopped ? undefined : (await clients.read(svc.pool, id))?.resource;
      if (!client?.saml?.metadata.url) {
        await releaseSamlMetadataClaim(svc.pool, id);
        continue;
      }
      // The outcome is recorded by the look itself; a busy one gives the claim up.
      if (!(await svc.serviceProviders.lookAgain(client))) await releaseSamlMetadataClaim(svc.pool, id);
    }
  };
  const run = (): void => {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    running = pass()
      .catch((err: unknown) => svc.log.warn({ err }, 'looking at the metadata of SAML apps failed; trying again at the next pass'))
      .finally(() => {
        running = undefined;
        if (again) {
          again = false;
          run();
        }
      });
  };
  svc.feed.onChange('clients', run);
  const timer = setInterval(run, PASS_EVERY_MS);
  timer.unref();
  run();
  return async () => {
    stopped = true;
    clearInterval(timer);
    await running;
  };
}

/** A SAML app as the admin console shows it (GET /Client/<id>/$saml). */
export interface SamlAppView {
  client: string;
  nameIdFormat: string;
  idpInitiated: boolean;
  encryptAssertions: boolean;
  /** Where its metadata comes from, and (by URL) what the box last made of it: absent until it first looked at this URL. */
  metadata: { source: 'inline' } | { source: 'url'; url: string; status?: SamlMetadataStatus };
  /** What the metadata says of the app: the inline document's, or the last one read at the URL. */
  sp?: SamlMetadataSummary;
  /** Why the inline document cannot be read. */
  problem?: string;
  /** What an admin pastes into the app: the box as its identity provider (./idp-metadata.ts). */
  idp: { metadataUrl: string; entityId: string; ssoUrl: string; sloUrl: string };
}

/** The view of `client`, a SAML app, at the box of `issuer`. */
export async function samlAppView(pool: Pool, client: Client, issuer: string): Promise<SamlAppView> {
  const saml = client.saml!;
  const at = idpEndpoints(issuer);
  const common = {
    client: client.id,
    nameIdFormat: saml.nameIdFormat ?? 'persistent',
    idpInitiated: saml.idpInitiated ?? false,
    encryptAssertions: saml.encryptAssertions ?? false,
    idp: { metadataUrl: at.entityId, entityId: at.entityId, ssoUrl: at.sso, sloUrl: at.slo },
  };
  if (saml.metadata.url !== undefined) {
    // What the box made of another URL, the one before, says nothing of this one.
    const recorded = await samlMetadataStatus(pool, client.id);
    const status = recorded?.url === saml.metadata.url ? recorded : undefined;
    const sp = status?.outcome === 'read' ? status.summary : undefined;
    return { ...common, metadata: { source: 'url', url: saml.metadata.url, ...(status ? { status } : {}) }, ...(sp ? { sp } : {}) };
  }
  try {
    return { ...common, metadata: { source: 'inline' }, sp: metadataSummary(await readSpMetadata(saml.metadata.xml ?? '')) };
  } catch (err) {
    if (!(err instanceof SamlRefusal)) throw err;
    return { ...common, metadata: { source: 'inline' }, problem: err.reason };
  }
}
