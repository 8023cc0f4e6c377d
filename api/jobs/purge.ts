// Background upkeep: delete sessions that stopped mattering, and keys no live
// token needs. One process of a box does it at a time (the upkeep's lease); the rest skip.
// The refused decisions kept for `boxauth explain` are bounded by age and by rows
// (BOXAUTH_DECISION_MAX_ROWS), and every process measures them at each run, so that
// whichever is scraped says how full the record is.
import { withClient, type Queryable, type Pool } from '../db/pool.js';
import type { Config } from '../config.js';
import type { Audit } from '../audit.js';
import type { Logger } from '../log.js';
import type { Keyring } from '../credentials/keyring.js';
import type { Metrics } from '../metrics.js';
import { purgeAuthorizationCodes } from '../store/authorization-codes.js';
import { purgeBrowserSessions } from '../store/browser-sessions.js';
import { purgeFailures } from '../store/sign-in-failures.js';
import { purgeSignInSteps } from '../store/sign-in-steps.js';
import { purgeChallenges } from '../store/webauthn-challenges.js';
import { purgeLinks } from '../store/account-links.js';
import { purgeUpstreamSignIns } from '../store/identity-providers.js';
import { purgeDeviceCodes } from '../store/device-codes.js';
import { purgePushedRequests } from '../store/pushed-requests.js';
import { purgeLogoutChains } from '../store/saml-logout-chains.js';
import { purgeSessions } from '../store/sessions.js';
import { removeUnusedRegistrations } from '../store/clients.js';
import { asTheOnlyUpkeep } from '../store/upkeep.js';
import { capDecisions, decisionsKept, purgeDecisions } from '../store/decisions.js';
import { purgeProofs } from '../store/dpop-proofs.js';
import { purgePollSets } from '../store/ssf-streams.js';
import { auditEventsKept, capAuditEvents, purgeAuditEvents } from '../store/audit-events.js';

/** What this module uses of the process's services (api/services.ts, built in api/server.ts). */
interface Needs {
  config: Config;
  log: Logger;
  pool: Pool;
  keyring: Keyring;
  metrics: Metrics;
  audit: Audit;
}

const KEY_CHECK_EVERY_MS = 24 * 3600 * 1000;
/** How long a poll stream's SET waits to be acknowledged: a day, as a push is tried (api/ssf/kind.ts GIVE_UP_AFTER_MS). */
const POLL_SET_HOURS = 24;

/** What the upkeep uses: the database, its retention settings, the signing keys it rotates and drops (audited), and the metrics it sets. */
export type PurgeServices = Pick<Needs, 'audit' | 'config' | 'keyring' | 'log' | 'metrics' | 'pool'>;

async function measureDecisions(db: Queryable, svc: PurgeServices): Promise<void> {
  const kept = await decisionsKept(db);
  svc.metrics.decisionRecords.set(kept.rows);
  svc.metrics.decisionRecordBytes.set(kept.bytes);
}

/** The audit trail: its retention, then its row cap (the oldest go first, changes last: a flood keeps the newest, and every change), then its size. */
async function boundAuditTrail(db: Queryable, svc: PurgeServices): Promise<void> {
  for (let n = -1; n !== 0;) n = await purgeAuditEvents(db, svc.config.auditRetentionDays);
  let capped = 0;
  for (let n = -1; n !== 0;) {
    n = await capAuditEvents(db, svc.config.auditMaxRows);
    capped += n;
  }
  if (capped) {
    svc.metrics.auditEventsNotKept.inc({ why: 'cap' }, capped);
    svc.log.warn(
      { deleted: capped, maxRows: svc.config.auditMaxRows },
      'the audit trail is full (BOXAUTH_AUDIT_MAX_ROWS): deleted the oldest events before their retention',
    );
  }
  const kept = await auditEventsKept(db);
  svc.metrics.auditEvents.set(kept.rows);
  svc.metrics.auditEventBytes.set(kept.bytes);
}

export function startPurgeJob(svc: PurgeServices): () => void {
  let lastKeyCheck = 0;
  /** One run of the upkeep, by the one process holding its lock. */
  const upkeep = async (client: Queryable): Promise<void> => {
    let purged = 0;
    for (let n = -1; n !== 0;) {
      n = await purgeSessions(client, svc.config.sessionRetentionHours);
      purged += n;
    }
    if (purged) svc.log.info({ purged }, 'purged old sessions');
    // Throttling windows of sign-ins and sign-ups share a table: keep each for the longest window.
    const { signInWindowSeconds, signUpAddressWindowSeconds, signUpBoxWindowSeconds, mailWindowSeconds } = svc.config;
    await purgeBrowserSessions(client);
    await purgeAuthorizationCodes(client);
    await purgeFailures(client, Math.max(signInWindowSeconds, signUpAddressWindowSeconds, signUpBoxWindowSeconds, mailWindowSeconds));
    await purgeLinks(client);
    await purgeUpstreamSignIns(client);
    await purgeDeviceCodes(client);
    await purgePushedRequests(client);
    await purgeLogoutChains(client);
    await purgeSignInSteps(client);
    await purgeChallenges(client);
    const unused = await removeUnusedRegistrations(client, svc.config.dynamicRegistration.unusedHours);
    if (unused) svc.log.info({ removed: unused }, 'removed dynamically registered clients nobody used');
    for (let n = -1; n !== 0;) n = await purgeDecisions(client, svc.config.decisionRetentionHours);
    let capped = 0;
    for (let n = -1; n !== 0;) {
      n = await capDecisions(client, svc.config.decisionMaxRows);
      capped += n;
    }
    if (capped) {
      svc.metrics.decisionsNotKept.inc({ why: 'cap' }, capped);
      svc.log.warn(
        { deleted: capped, maxRows: svc.config.decisionMaxRows },
        'the record of refused decisions is full (BOXAUTH_DECISION_MAX_ROWS): deleted the oldest before their retention',
      );
    }
    await measureDecisions(client, svc);
    await boundAuditTrail(client, svc);
    for (let n = -1; n !== 0;) n = await purgeProofs(client); // DPoP proofs past their window
    // SETs of poll streams nobody acknowledged, as long as a push is tried (api/ssf/kind.ts).
    for (let n = -1; n !== 0;) n = await purgePollSets(client, POLL_SET_HOURS);

    // Rotates the signing key when it is due.
    for (const rotation of await svc.keyring.ensureActive()) svc.audit.record({ event: 'signing_key', action: 'rotated', ...rotation });
    if (Date.now() - lastKeyCheck > KEY_CHECK_EVERY_MS) {
      lastKeyCheck = Date.now();
      const dropped = await svc.keyring.dropUnusedRetiredKeys();
      if (dropped.length) svc.audit.record({ event: 'signing_key', action: 'dropped', kids: dropped });
    }
  };
  const run = (): Promise<void> =>
    withClient(svc.pool, (client) =>
      asTheOnlyUpkeep(
        client,
        () => upkeep(client),
        () => measureDecisions(client, svc),
      ),
    );
  const timer = setInterval(() => {
    run().catch((err: Error) => svc.log.warn({ err }, 'purge job failed; will retry'));
  }, svc.config.purgeIntervalSeconds * 1000);
  timer.unref();
  return () => clearInterval(timer);
}
