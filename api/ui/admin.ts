// The admin UI's page: a shell for /assets/admin.js (api/ui/browser/admin.ts), which signs in through the
// box's own authorization code flow (client boxauth-admin, PKCE) and manages
// users and groups through the REST API, and lists the identity providers.
import { ADMIN_CLIENT_ID } from '../reserved.js';
import { boxTabButtons, boxTabPanels } from './admin-box.js';
import { eventsPanel, eventsTabButton } from './admin-events.js';
import type { Branding } from '../branding.js';
import { html } from './html.js';
import { FACTOR_KIND_NAMES, FACTOR_KINDS } from '../factor-kinds.js';
import { en } from '../messages/en.js';

/**
 * Each kind of factor's label in English, as the console says it (data-factor-kinds): the script
 * reads the kinds from the page, so that a new kind needs no line in it.
 */
const factorKindNames = (): string =>
  JSON.stringify(Object.fromEntries(FACTOR_KIND_NAMES.map((kind) => [kind, en[FACTOR_KINDS[kind].label]])));

/** The admin console, in English (docs/guides/branding-and-languages.md), its header named as the box's pages are. */
export function adminPage(box: string, baseUrl: string, branding: Branding): string {
  return `<!doctype html>${
    html`<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Admin · ${branding.displayName ?? box}</title>
<link rel="stylesheet" href="/assets/boxauth.css">
${branding.primaryColor || branding.backgroundColor ? html`<link rel="stylesheet" href="/assets/brand.css">` : ''}
<script type="module" src="/assets/admin.js"></script>
</head>
<body class="admin" data-base-url="${baseUrl}" data-client-id="${ADMIN_CLIENT_ID}" data-box="${box}" data-factor-kinds="${factorKindNames()}">
<header class="topbar">
  <p class="brand">${
    branding.displayName
      ? html`${branding.logoUrl ? html`<img class="logo" src="${branding.logoUrl}" alt="" height="24">` : ''}<span>${branding.displayName}</span> · admin`
      : html`boxauth · <span>${box}</span> · admin`
  }</p>
  <button type="button" id="sign-out" class="secondary" hidden>Sign out</button>
</header>
<main id="app">
  <p id="app-status" role="status">Signing in…</p>
  <div id="tabs" hidden>
    <div role="tablist" aria-label="Records">
      <button type="button" role="tab" id="tab-users" aria-controls="panel-users" aria-selected="true">Users</button>
      <button type="button" role="tab" id="tab-groups" aria-controls="panel-groups" aria-selected="false" tabindex="-1">Groups</button>
      <button type="button" role="tab" id="tab-sessions" aria-controls="panel-sessions" aria-selected="false" tabindex="-1">Sessions</button>
      <button type="button" role="tab" id="tab-providers" aria-controls="panel-providers" aria-selected="false" tabindex="-1">Identity providers</button>${boxTabButtons}
      <button type="button" role="tab" id="tab-keys" aria-controls="panel-keys" aria-selected="false" tabindex="-1">Keys</button>
      <button type="button" role="tab" id="tab-settings" aria-controls="panel-settings" aria-selected="false" tabindex="-1">Settings</button>${eventsTabButton}
    </div>

    <section role="tabpanel" id="panel-users" aria-labelledby="tab-users">
      <div class="toolbar">
        <label for="users-filter">Filter</label>
        <input type="search" id="users-filter" autocomplete="off" placeholder="part of an email">
        <button type="button" id="users-new">New user</button>
      </div>
      <div class="split">
        <ul id="users-list" class="records" aria-label="Users"></ul>
        <form id="user-form" class="editor" novalidate>
          <h2 id="user-form-title">New user</h2>
          <div class="field"><label for="user-email">Email</label><input id="user-email" name="email" type="email" autocomplete="off"><p class="error" id="user-email-error" role="alert"></p></div>
          <div class="field"><label class="check"><input id="user-email_verified" name="email_verified" type="checkbox" aria-describedby="user-email_verified-hint"> Email verified</label><p class="hint" id="user-email_verified-hint">Ticking it is vouching for the address, without a link, in your name (the box records it). Apps and Kubernetes trust a verified email as who the person is: tick it only for an address you know is theirs. A new address is unverified until its link is followed, unless you tick this.</p><p class="hint" id="user-verification-state" aria-live="polite"></p><p class="error" id="user-email_verified-error" role="alert"></p></div>
          <div class="field"><label for="user-password">Password</label><input id="user-password" name="password" type="password" autocomplete="new-password"><p class="hint" id="user-password-hint"></p><p class="error" id="user-password-error" role="alert"></p></div>
          <div class="field"><label class="check"><input id="user-active" name="active" type="checkbox" aria-describedby="user-active-hint"> Active</label><p class="hint" id="user-active-hint">A person turned off cannot sign in; saving it ends their signed-in browsers, codes and every app's tokens at once. Turned on again, they sign in anew.</p><p class="error" id="user-active-error" role="alert"></p></div>
          <div class="field"><label for="user-data">Data</label><textarea id="user-data" name="data" rows="4" spellcheck="false" placeholder='{"any": "JSON"}'></textarea><p class="error" id="user-data-error" role="alert"></p></div>
          <fieldset class="field" id="user-groups"><legend>Groups</legend><div id="user-groups-options"></div><p class="error" id="user-group-ids-error" role="alert"></p></fieldset>
          <p class="error" id="user-form-error" role="alert"></p>
          <div class="actions"><button type="submit">Save</button><button type="button" id="user-delete" class="danger" disabled>Delete</button></div>
          <section id="user-scim" aria-labelledby="user-scim-title" hidden>
            <h3 id="user-scim-title">From their directory (SCIM)</h3>
            <p class="hint">Written by the directory that provisions this person; change them there.</p>
            <dl id="user-scim-list" aria-labelledby="user-scim-title"></dl>
          </section>
          <section id="user-identities" aria-labelledby="user-identities-title" hidden>
            <h3 id="user-identities-title">Linked identities</h3>
            <ul id="user-identities-list" class="sessions" aria-labelledby="user-identities-title"></ul>
            <p class="error" id="user-identities-error" role="alert"></p>
          </section>
          <section id="user-factors" aria-labelledby="user-factors-title" hidden>
            <h3 id="user-factors-title">Second factors</h3>
            <ul id="user-factors-list" aria-label="Second factors"></ul>
            <p class="hint" id="user-factors-state"></p>
            <div class="actions"><button type="button" id="user-factors-reset" class="danger">Reset second factors</button></div>
          </section>
          <section id="user-sessions" aria-labelledby="user-sessions-title" hidden>
            <h3 id="user-sessions-title">Sessions</h3>
            <h4 id="user-browsers-title">Signed-in browsers</h4>
            <ul id="user-browsers-list" class="sessions" aria-labelledby="user-browsers-title"></ul>
            <h4 id="user-grants-title">Apps</h4>
            <ul id="user-grants-list" class="sessions" aria-labelledby="user-grants-title"></ul>
            <p class="error" id="user-sessions-error" role="alert"></p>
            <div class="actions"><button type="button" id="user-sessions-end-all" class="danger">End all sessions</button></div>
          </section>
        </form>
      </div>
    </section>

    <section role="tabpanel" id="panel-groups" aria-labelledby="tab-groups" hidden>
      <div class="toolbar">
        <label for="groups-filter">Filter</label>
        <input type="search" id="groups-filter" autocomplete="off" placeholder="part of a name">
        <button type="button" id="groups-new">New group</button>
      </div>
      <div class="split">
        <ul id="groups-list" class="records" aria-label="Groups"></ul>
        <form id="group-form" class="editor" novalidate>
          <h2 id="group-form-title">New group</h2>
          <div class="field"><label for="group-name">Name</label><input id="group-name" name="name" type="text" autocomplete="off"><p class="error" id="group-name-error" role="alert"></p></div>
          <div class="field"><label for="group-description">Description</label><textarea id="group-description" name="description" rows="3"></textarea><p class="error" id="group-description-error" role="alert"></p></div>
          <div class="field"><label class="check"><input id="group-require_second_factor" name="require_second_factor" type="checkbox" aria-describedby="group-require_second_factor-hint"> Require a second factor</label><p class="hint" id="group-require_second_factor-hint">Members without a passkey or an authenticator app enrol one at their next sign-in, before any app gets a token.</p><p class="error" id="group-require_second_factor-error" role="alert"></p></div>
          <p class="error" id="group-form-error" role="alert"></p>
          <div class="actions"><button type="submit">Save</button><button type="button" id="group-delete" class="danger" disabled>Delete</button></div>
          <section id="group-members" aria-labelledby="group-members-title" hidden>
            <h3 id="group-members-title">Members</h3>
            <ul id="group-members-list" class="sessions" aria-labelledby="group-members-title"></ul>
            <div class="toolbar"><label for="group-member-email">Add a member</label><input type="email" id="group-member-email" autocomplete="off" placeholder="their email" list="group-member-choices"><datalist id="group-member-choices"></datalist><button type="button" id="group-member-add">Add</button></div>
            <p class="error" id="group-members-error" role="alert"></p>
          </section>
        </form>
      </div>
    </section>

    <section role="tabpanel" id="panel-sessions" aria-labelledby="tab-sessions" hidden>
      <div class="toolbar">
        <label for="sessions-filter">Filter</label>
        <input type="search" id="sessions-filter" autocomplete="off" placeholder="part of an email">
        <label for="sessions-client">Client</label>
        <input type="search" id="sessions-client" autocomplete="off" placeholder="any client" list="sessions-clients">
        <datalist id="sessions-clients"></datalist>
      </div>
      <p class="hint" id="sessions-count" aria-live="polite"></p>
      <p class="error" id="sessions-error" role="alert"></p>
      <table id="sessions-table" class="sessions">
        <caption>People's live grants to apps, newest first</caption>
        <thead><tr><th scope="col">Who</th><th scope="col">Client</th><th scope="col">Since</th><th scope="col">Last used</th><th scope="col">Factors</th><th scope="col">From</th><th scope="col"><span class="visually-hidden">End</span></th></tr></thead>
        <tbody id="sessions-rows"></tbody>
      </table>
      <p class="hint" id="browsers-count" aria-live="polite"></p>
      <p class="error" id="browsers-error" role="alert"></p>
      <table id="browsers-table" class="sessions">
        <caption>Signed-in browsers, newest first</caption>
        <thead><tr><th scope="col">Who</th><th scope="col">Since</th><th scope="col">Until</th><th scope="col">Factors</th><th scope="col">From</th><th scope="col">Browser</th><th scope="col"><span class="visually-hidden">End</span></th></tr></thead>
        <tbody id="browsers-rows"></tbody>
      </table>
    </section>

    <section role="tabpanel" id="panel-providers" aria-labelledby="tab-providers" hidden>
      <p class="hint">Where people sign in with an account they already have. Change them with <code>boxauth idp</code>, the REST API or their Kubernetes resource; their secrets are never shown.</p>
      <p class="error" id="providers-error" role="alert"></p>
      <table id="providers-table" class="sessions">
        <caption>Identity providers</caption>
        <thead><tr><th scope="col">ID</th><th scope="col">Type</th><th scope="col">Display name</th><th scope="col">Disabled</th><th scope="col">Managed by</th></tr></thead>
        <tbody id="providers-rows"></tbody>
      </table>
    </section>
${boxTabPanels}

    <section role="tabpanel" id="panel-keys" aria-labelledby="tab-keys" hidden>
      <p class="hint">The keys that sign the box's tokens. The active key of each algorithm signs; a retired key no longer signs and stays published at <code>/.well-known/jwks.json</code> while tokens it signed may live, so they keep working.</p>
      <div id="keys-actions" hidden><div class="toolbar">
        <label for="keys-alg">Algorithm</label>
        <select id="keys-alg"></select>
        <button type="button" id="keys-rotate" class="danger">Rotate</button>
      </div></div>
      <p class="error" id="keys-error" role="alert"></p>
      <table id="keys-table" class="sessions">
        <caption>Signing keys, newest first</caption>
        <thead><tr><th scope="col">Key ID</th><th scope="col">Algorithm</th><th scope="col">State</th><th scope="col">Signs</th><th scope="col">Created</th><th scope="col">Rotates</th><th scope="col">Published</th></tr></thead>
        <tbody id="keys-rows"></tbody>
      </table>
    </section>

    <section role="tabpanel" id="panel-settings" aria-labelledby="tab-settings" hidden>
      <p class="hint">How this box is configured, as it started (its environment: see the configuration reference). Read-only; no secret is shown.</p>
      <p class="error" id="settings-error" role="alert"></p>
      <div id="settings-body"></div>
    </section>
${eventsPanel}
  </div>
</main>
</body>
</html>`.text
  }`;
}
