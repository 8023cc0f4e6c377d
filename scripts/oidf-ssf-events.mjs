#!/usr/bin/env node
// The events the OpenID Foundation's CAEP transmitter plan waits for, made to happen for real
// (started by scripts/oidf-ssf.mjs before the plan, detached): for a few minutes, and then it ends
// by itself, the setup's person signs in at the sign-in page, an app gets a grant through that
// browser, the person signs out of it (CAEP session-revoked), and an administrator gives them a new
// password (CAEP credential-change). No test mode of the box is involved: these are the pages and
// APIs every person and administrator uses.
//
// The plan's other modules take every SET their stream gets for a verification event (the
// verification modules check its subject, and fail on a CAEP event's), so the rounds run only while
// the suite runs its CAEP module (asked of the suite's API, OIDF_SUITE_URL); when the suite cannot
// be asked, they run the whole time. The job ends once that module is over, or at its deadline.
//
// Usage: oidf-ssf-events.mjs <base url>; environment: OIDF_ROOT_TOKEN, OIDF_SSF_PERSON_PASSWORD,
// OIDF_SSF_EVENTS_SECONDS (how long at most, default 420), OIDF_SUITE_URL (default
// https://127.0.0.1:31443; "none" not to ask), NODE_EXTRA_CA_CERTS for HTTPS.
/* global process, console, fetch, URL, URLSearchParams, Buffer, setTimeout */
import { randomBytes } from 'node:crypto';
import { boxCaller, SIGNALS_APP, SIGNALS_APP_REDIRECT, SIGNALS_PERSON } from './oidf-ssf.mjs';

const base = process.argv[2];
const token = process.env.OIDF_ROOT_TOKEN;
let password = process.env.OIDF_SSF_PERSON_PASSWORD;
const seconds = Number(process.env.OIDF_SSF_EVENTS_SECONDS || 420);
const suite = process.env.OIDF_SUITE_URL || 'https://127.0.0.1:31443';
const CAEP_MODULE = 'openid-ssf-transmitter-stream-caep-interop';
const pause = Number(process.env.OIDF_SSF_EVENTS_PAUSE || 8);
if (!base || !token || !password) {
  console.error('usage: OIDF_ROOT_TOKEN=… OIDF_SSF_PERSON_PASSWORD=… oidf-ssf-events.mjs <base url>');
  process.exit(2);
}
const admin = boxCaller(base, token);
const deadline = Date.now() + seconds * 1000;
const log = (...args) => console.log(new Date().toISOString(), ...args);

/** A browser without JavaScript: its cookies, and the forms it posts. */
class Browser {
  cookies = new Map();
  async fetch(url, init = {}) {
    const res = await fetch(new URL(url, base), {
      ...init,
      redirect: 'manual',
      headers: { ...(init.headers ?? {}), Cookie: [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ') },
    });
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const at = pair.indexOf('=');
      this.cookies.set(pair.slice(0, at).trim(), pair.slice(at + 1).trim());
    }
    return res;
  }
  async signIn(email, pass) {
    const page = await (await this.fetch('/auth/sign-in?return_to=%2Fauth%2Fsigned-in')).text();
    const fields = {};
    for (const input of page.match(/<input[^>]*type="hidden"[^>]*>/g) ?? []) {
      const name = /name="([^"]*)"/.exec(input)?.[1];
      const value = /value="([^"]*)"/.exec(input)?.[1] ?? '';
      if (name)
        fields[name] = value
          .replace(/&amp;/g, '&')
          .replace(/&quot;/g, '"')
          .replace(/&#39;/g, "'");
    }
    const res = await this.fetch('/auth/sign-in', {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ ...fields, email, password: pass }).toString(),
    });
    if (res.status !== 303) throw new Error(`sign-in answered ${res.status}`);
  }
}

/** One round: signed in, a grant, signed out, a new password. */
async function round(personId) {
  const browser = new Browser();
  await browser.signIn(SIGNALS_PERSON, password);
  const authorize = new URLSearchParams({
    response_type: 'code',
    client_id: SIGNALS_APP,
    redirect_uri: SIGNALS_APP_REDIRECT,
  });
  const authorized = await browser.fetch(`/auth/authorize?${authorize}`);
  const code = authorized.headers.get('location') && new URL(authorized.headers.get('location')).searchParams.get('code');
  if (!code) throw new Error(`the authorization request answered ${authorized.status} without a code`);
  const tokens = await fetch(`${base}/auth/token`, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/x-www-form-urlencoded',
      Authorization: `Basic ${Buffer.from(`${SIGNALS_APP}:${SIGNALS_APP}-secret-for-the-suite`).toString('base64')}`,
    },
    body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: SIGNALS_APP_REDIRECT }).toString(),
  });
  const { access_token: accessToken } = await tokens.json();
  if (!accessToken) throw new Error(`the token endpoint answered ${tokens.status}`);
  const signedOut = await fetch(`${base}/Session`, { method: 'DELETE', headers: { Authorization: `Bearer ${accessToken}` } });
  log(`signed in and out (${signedOut.status}): session-revoked`);
  password = `Ssf-${randomBytes(12).toString('base64url')}`;
  await admin('PUT', `/users/${personId}`, { password });
  log('new password: credential-change');
}

const found = await admin('GET', `/users?email=${encodeURIComponent(SIGNALS_PERSON)}`);
const person = (Array.isArray(found) ? found : []).find((u) => u.email === SIGNALS_PERSON);
if (!person) {
  console.error(`no person ${SIGNALS_PERSON}`);
  process.exit(1);
}
log(`making events about ${SIGNALS_PERSON} (user ${person.id}) for ${seconds} s`);
/** Whether the suite runs its CAEP module now; undefined when the suite cannot be asked. */
async function caepModuleRuns() {
  if (suite === 'none') return undefined;
  try {
    const running = await (await fetch(`${suite}/api/runner/running`)).json();
    for (const id of running) {
      const info = await (await fetch(`${suite}/api/info/${encodeURIComponent(id)}`)).json();
      if (info.testName === CAEP_MODULE) return true;
    }
    return false;
  } catch {
    return undefined;
  }
}

let seen = false;
while (Date.now() < deadline) {
  const runs = await caepModuleRuns();
  if (runs === false && seen) break; // the CAEP module is over
  if (runs !== false) {
    seen ||= runs === true;
    try {
      await round(person.id);
    } catch (err) {
      log(`a round failed: ${err instanceof Error ? err.message : String(err)}`);
      // The box is gone (its run ended): so is the job's reason to be; a job left over from an
      // earlier run must not try an old password on the next run's box.
      if (err instanceof Error && err.cause?.code === 'ECONNREFUSED') break;
    }
  }
  await new Promise((resolve) => setTimeout(resolve, (runs === false ? 1 : pause) * 1000));
}
log('done');
