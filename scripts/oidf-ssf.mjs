// The box's side of the OpenID Foundation's SSF transmitter plans and of its back-channel logout
// plan (../shared/oidf/README.md, "The product's setup"), run by scripts/oidf-setup before each:
// only through the box's documented APIs, as an administrator would, and idempotent (every write
// a PUT, or a POST of what is not there yet).
//
// - backchannel, ssf-tx, ssf-tx-caep: the suite's receiver address (https://127.0.0.1:31443, a
//   loopback address the box refuses to send to by default) is allowed (the outbox's setting).
// - ssf-tx, ssf-tx-caep: the receiver `oidf-ssf-receiver` may use the stream management API
//   (AccessPolicy oidf-ssf-receiver-streams) and may have the events of the suite's subject and of
//   the person this setup signs in and out (AccessPolicy oidf-ssf-receiver-events; deny by default).
// - ssf-tx-caep: the plan waits for real CAEP events about a person; a background job
//   (scripts/oidf-ssf-events.mjs, a few minutes at most, it ends by itself) makes them happen the
//   way they happen to anyone: the person signs in, is signed out, their password changes.
/* global process, console, fetch, URL */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

const SUITE_RECEIVER = 'https://127.0.0.1:31443';
/** The person the events of the CAEP plan are about: the setup's own, whose password it holds (the suite's subject's is the suite's). */
export const SIGNALS_PERSON = 'oidf-ssf-person@example.com';
export const SIGNALS_APP = 'oidf-ssf-app';
export const SIGNALS_APP_REDIRECT = 'https://app.example/ssf-cb';

export function boxCaller(base, token) {
  return async function call(method, url, body, ok = [200, 201, 204]) {
    const res = await fetch(`${base}${url}`, {
      method,
      headers: { Authorization: `Bearer ${token}`, ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    const text = await res.text();
    if (!ok.includes(res.status)) throw new Error(`${method} ${url}: ${res.status} ${text}`);
    return text ? JSON.parse(text) : undefined;
  };
}

const escaped = (s) => s.replace(/[.^$*+?()[\]{}|\\]/g, '\\$&');

/**
 * Lets the box send notices to the suite's receiver: its address joins the ranges an administrator
 * allows at runtime (GET and PUT /settings/notices, the outbox's allow-list), the others kept.
 */
async function allowSuiteReceiver(call) {
  const address = `${new URL(SUITE_RECEIVER).hostname}/32`;
  const { allowed_addresses: allowed } = await call('GET', '/settings/notices');
  if (!allowed.includes(address)) await call('PUT', '/settings/notices', { allowed_addresses: [...allowed, address] });
}

/** Sets up what `plan` needs; nothing for a plan that is not one of these. */
export async function setUpSignals(plan, base, env = process.env) {
  if (!['backchannel', 'ssf-tx', 'ssf-tx-caep'].includes(plan)) return;
  const token = env.OIDF_ROOT_TOKEN;
  if (!token) throw new Error('OIDF_ROOT_TOKEN is not set');
  const call = boxCaller(base, token);
  await allowSuiteReceiver(call);
  console.log(`allowed the suite's receiver ${SUITE_RECEIVER}`);
  if (plan === 'backchannel') return;

  const receiver = env.OIDF_SSF_CLIENT_ID || 'oidf-ssf-receiver';
  const subject = env.OIDF_USER_EMAIL || 'oidf-user@example.com';
  await call('PUT', `/AccessPolicy/${receiver}-streams`, {
    engine: 'matcho',
    description: "the conformance suite's SSF receiver may manage its streams (the stream management API, its poll endpoint)",
    link: [{ id: receiver, resourceType: 'Client' }],
    matcho: { uri: '#^/ssf/(streams|status|subjects/add|subjects/remove|verify|poll/[^/]+)$' },
  });
  await call('PUT', `/AccessPolicy/${receiver}-events`, {
    engine: 'matcho',
    description: "the conformance suite's SSF receiver may have the events of the suite's subject and of the setup's person",
    link: [{ id: receiver, resourceType: 'Client' }],
    matcho: { ssf: { receiver, subject: { email: `#^(${escaped(subject)}|${escaped(SIGNALS_PERSON)})$`, email_verified: true } } },
  });
  console.log(`policies ${receiver}-streams and ${receiver}-events in place`);
  if (plan !== 'ssf-tx-caep') return;

  const password = await preparePerson(call);
  startEventsJob(base, token, password);
}

/** The setup's person (a fresh password each run: only the job knows it) and the first-party app they sign in to. */
async function preparePerson(call) {
  const password = `Ssf-${randomBytes(12).toString('base64url')}`;
  const found = await call('GET', `/users?email=${encodeURIComponent(SIGNALS_PERSON)}`);
  const person = (Array.isArray(found) ? found : []).find((u) => u.email === SIGNALS_PERSON);
  if (person) await call('PUT', `/users/${person.id}`, { password });
  else await call('POST', '/users', { email: SIGNALS_PERSON, email_verified: true, password, data: '{"name":"SSF Subject"}' });
  await call('PUT', `/Client/${SIGNALS_APP}`, {
    grant_types: ['authorization_code'],
    auth: { authorization_code: { redirect_uri: SIGNALS_APP_REDIRECT } },
    secret: `${SIGNALS_APP}-secret-for-the-suite`,
    first_party: true,
    description: 'the app the SSF setup signs its person in to (scripts/oidf-ssf-events.mjs)',
  });
  return password;
}

/**
 * Starts the bounded job, detached, so that the setup ends and the plan starts while it runs. Its
 * lines go where the setup's go (the harness's logs/oidf-setup-<plan>.log, a file), or to
 * OIDF_SSF_EVENTS_LOG.
 */
function startEventsJob(base, token, password) {
  const file = process.env.OIDF_SSF_EVENTS_LOG;
  const out = file ? fs.openSync(file, 'a') : 'inherit';
  const job = spawn(process.execPath, [path.join(import.meta.dirname, 'oidf-ssf-events.mjs'), base], {
    detached: true,
    stdio: ['ignore', out, out],
    env: { ...process.env, OIDF_ROOT_TOKEN: token, OIDF_SSF_PERSON_PASSWORD: password },
  });
  job.unref();
  console.log(`started the events job (pid ${job.pid}${file ? `, log ${file}` : ''})`);
}
