// The admin UI's tabs of the box's records (docs/guides/admin-console.md): Clients, Access
// policies, Apps and Hooks, their buttons and panels in the page of ./admin.ts. Their scripts are
// ./browser/clients.ts, ./browser/policies.ts, ./browser/apps.ts and ./browser/hooks.ts.
import { html, type Html } from './html.js';

/** The moments a Hook may be asked at (crds/hook.yaml), as the Hooks tab's boxes say them. */
const MOMENTS: [string, string][] = [
  ['signingIn', 'Signing in'],
  ['personCreating', 'A person made'],
  ['tokenIssuing', 'An access token'],
  ['idTokenIssuing', 'An ID token'],
  ['userinfoAnswering', 'A UserInfo answer'],
  ['samlAssertionIssuing', 'A SAML assertion'],
  // Never "password" in the label: the page's Password fields are found by their label.
  ['passwordImport', 'An old system’s check of a sign-in'],
];

const GRANT_TYPES: [string, string][] = [
  ['client_credentials', 'Client credentials'],
  ['authorization_code', 'Authorization code'],
  ['refresh_token', 'Refresh token'],
  ['implicit', 'Implicit'],
  ['urn:ietf:params:oauth:grant-type:device_code', 'Device code'],
  ['urn:ietf:params:oauth:grant-type:token-exchange', 'Token exchange'],
];

export const boxTabButtons: Html = html`
      <button type="button" role="tab" id="tab-clients" aria-controls="panel-clients" aria-selected="false" tabindex="-1">Clients</button>
      <button type="button" role="tab" id="tab-policies" aria-controls="panel-policies" aria-selected="false" tabindex="-1">Access policies</button>
      <button type="button" role="tab" id="tab-apps" aria-controls="panel-apps" aria-selected="false" tabindex="-1">Apps</button>
      <button type="button" role="tab" id="tab-hooks" aria-controls="panel-hooks" aria-selected="false" tabindex="-1">Hooks</button>`;

const clientsPanel = html`
    <section role="tabpanel" id="panel-clients" aria-labelledby="tab-clients" hidden>
      <div class="toolbar">
        <label for="clients-filter">Filter</label>
        <input type="search" id="clients-filter" autocomplete="off" placeholder="part of a name">
        <button type="button" id="clients-new">New client</button>
      </div>
      <p class="error" id="clients-error" role="alert"></p>
      <div class="split">
        <ul id="clients-list" class="records" aria-label="Clients"></ul>
        <form id="client-form" class="editor" novalidate>
          <h2 id="client-form-title">New client</h2>
          <p class="notice" id="client-managed" hidden></p>
          <fieldset class="field" id="client-fields">
            <div class="field"><label for="client-id">Name</label><input id="client-id" name="id" type="text" autocomplete="off"><p class="error" id="client-id-error" role="alert"></p></div>
            <div class="field"><label for="client-description">Description</label><textarea id="client-description" name="description" rows="2"></textarea><p class="error" id="client-description-error" role="alert"></p></div>
            <fieldset class="field" id="client-grant_types"><legend>Grant types</legend>${GRANT_TYPES.map(
              ([value, label]) => html`<label class="check"><input type="checkbox" name="grant_types" value="${value}"> ${label}</label>`,
            )}<p class="error" id="client-grant_types-error" role="alert"></p></fieldset>
            <div class="field"><label for="client-settings">Settings</label><textarea id="client-settings" name="settings" rows="8" spellcheck="false" placeholder='{"auth": {"client_credentials": {"token_format": "jwt"}}}' aria-describedby="client-settings-hint"></textarea><p class="hint" id="client-settings-hint">The rest of the record, as JSON: auth, scope, audience, first_party… (the Client resource's fields). Its secret is never shown: rotate it to give it a new one.</p><p class="error" id="client-settings-error" role="alert"></p></div>
            <p class="error" id="client-form-error" role="alert"></p>
            <div class="actions"><button type="submit">Save</button><button type="button" id="client-rotate" class="secondary" disabled>Rotate secret</button><button type="button" id="client-delete" class="danger" disabled>Delete</button></div>
          </fieldset>
          <section id="client-secret" aria-labelledby="client-secret-title" hidden>
            <h3 id="client-secret-title">New secret</h3>
            <p><code id="client-secret-value"></code></p>
            <p class="hint">Copy it now: it will not be shown again. The box keeps only its hash; rotate again if it is lost.</p>
          </section>
          <section id="client-saml" aria-labelledby="client-saml-title" hidden>
            <h3 id="client-saml-title">SAML app</h3>
            <p class="notice" id="client-saml-status" role="status"></p>
            <dl id="client-saml-list" class="facts" aria-labelledby="client-saml-title"></dl>
            <h4 id="client-saml-idp-title">Give the app these</h4>
            <dl id="client-saml-idp" class="facts" aria-labelledby="client-saml-idp-title"></dl>
            <p class="error" id="client-saml-error" role="alert"></p>
          </section>
        </form>
      </div>
    </section>`;

const policiesPanel = html`
    <section role="tabpanel" id="panel-policies" aria-labelledby="tab-policies" hidden>
      <div class="toolbar">
        <label for="policies-filter">Filter</label>
        <input type="search" id="policies-filter" autocomplete="off" placeholder="part of a name, App or link">
        <label for="policies-app">App</label>
        <input type="search" id="policies-app" autocomplete="off" placeholder="every policy" list="policies-apps">
        <datalist id="policies-apps"></datalist>
        <button type="button" id="policies-new">New policy</button>
      </div>
      <p class="error" id="policies-error" role="alert"></p>
      <div class="split">
        <ul id="policies-list" class="records" aria-label="Access policies"></ul>
        <form id="policy-form" class="editor" novalidate>
          <h2 id="policy-form-title">New policy</h2>
          <p class="notice" id="policy-managed" hidden></p>
          <fieldset class="field" id="policy-fields">
            <div class="field"><label for="policy-id">Name</label><input id="policy-id" name="id" type="text" autocomplete="off"><p class="error" id="policy-id-error" role="alert"></p></div>
            <div class="field"><label for="policy-description">Description</label><textarea id="policy-description" name="description" rows="2"></textarea><p class="error" id="policy-description-error" role="alert"></p></div>
            <div class="field"><label for="policy-app">App</label><input id="policy-app" name="app" type="text" autocomplete="off" list="policies-apps" aria-describedby="policy-app-hint"><p class="hint" id="policy-app-hint">Empty: the policy guards the box's own API. It cannot change once saved.</p><p class="error" id="policy-app-error" role="alert"></p></div>
            <div class="field"><label for="policy-engine">Engine</label><select id="policy-engine" name="engine"><option value="allow">allow</option><option value="matcho">matcho</option><option value="json-schema">json-schema</option><option value="cel">cel</option></select><p class="error" id="policy-engine-error" role="alert"></p></div>
            <div class="field"><label for="policy-link">Links</label><textarea id="policy-link" name="link" rows="3" spellcheck="false" placeholder="Group editors" aria-describedby="policy-link-hint"></textarea><p class="hint" id="policy-link-hint">One a line: Client, User or Group, then its id (a group's id or name). None: every caller.</p><p class="hint" id="policy-links-summary" aria-live="polite"></p><p class="error" id="policy-link-error" role="alert"></p></div>
            <div class="field"><label for="policy-rule">Rule</label><textarea id="policy-rule" name="rule" rows="6" spellcheck="false" placeholder='{"request-method": "get"}' aria-describedby="policy-rule-hint"></textarea><p class="hint" id="policy-rule-hint">The matcho pattern or the JSON Schema the request must match, as JSON; for cel, the expression over <code>request</code> that must be true (none for allow).</p><p class="error" id="policy-rule-error" role="alert"></p></div>
            <div class="field"><label for="policy-acr">Sign-in at least</label><select id="policy-acr" name="acr"><option value="">any</option><option value="urn:boxauth:acr:password">a password</option><option value="urn:boxauth:acr:mfa">a second factor</option><option value="phr">a passkey</option></select><p class="error" id="policy-acr-error" role="alert"></p></div>
            <div class="field"><label class="check"><input id="policy-dryRun" name="dryRun" type="checkbox"> Dry run only (logs what it would decide, decides nothing)</label><p class="error" id="policy-dryRun-error" role="alert"></p></div>
            <p class="error" id="policy-form-error" role="alert"></p>
            <div class="actions"><button type="submit">Save</button><button type="button" id="policy-delete" class="danger" disabled>Delete</button></div>
          </fieldset>
        </form>
      </div>
      <form id="dry-run-form" class="editor" novalidate aria-labelledby="dry-run-title">
        <h2 id="dry-run-title">Dry run</h2>
        <p class="hint">A request at an App, as its gateway would send it, decided by the App's policies now (POST /authz/explain): nothing is recorded.</p>
        <div class="toolbar">
          <label for="dry-run-app">App</label><input type="search" id="dry-run-app" autocomplete="off" list="policies-apps">
          <label for="dry-run-method">Method</label><select id="dry-run-method"><option>GET</option><option>POST</option><option>PUT</option><option>PATCH</option><option>DELETE</option><option>HEAD</option></select>
          <label for="dry-run-path">Path</label><input type="text" id="dry-run-path" value="/" autocomplete="off">
        </div>
        <div class="toolbar">
          <label for="dry-run-as">As</label><select id="dry-run-as"><option value="user">a user</option><option value="client">a client</option></select>
          <label for="dry-run-who">Who</label><input type="text" id="dry-run-who" autocomplete="off" placeholder="an email, a user's id or a client's id">
        </div>
        <div class="field"><label for="dry-run-request">Or a request (JSON)</label><textarea id="dry-run-request" rows="3" spellcheck="false" placeholder='{"app": "wiki", "method": "GET", "path": "/", "user": "7"}' aria-describedby="dry-run-request-hint"></textarea><p class="hint" id="dry-run-request-hint">When given, sent as it is instead of the fields above: app, method, path, host, headers, and token, user or client.</p></div>
        <p class="error" id="dry-run-form-error" role="alert"></p>
        <div class="actions"><button type="submit">Try</button></div>
        <p id="dry-run-verdict" class="verdict" role="status"></p>
        <table class="sessions" id="dry-run-table" hidden>
          <caption>What each policy of the App said</caption>
          <thead><tr><th scope="col">Policy</th><th scope="col">Verdict</th><th scope="col">Why</th></tr></thead>
          <tbody id="dry-run-rows"></tbody>
        </table>
      </form>
    </section>`;

const appsPanel = html`
    <section role="tabpanel" id="panel-apps" aria-labelledby="tab-apps" hidden>
      <div class="toolbar">
        <label for="apps-filter">Filter</label>
        <input type="search" id="apps-filter" autocomplete="off" placeholder="part of a name or host">
      </div>
      <p class="error" id="apps-error" role="alert"></p>
      <form id="apps-open" class="toolbar" hidden>
        <label for="apps-open-id">Open the App</label><input type="text" id="apps-open-id" autocomplete="off" placeholder="its id">
        <button type="submit">Open</button>
      </form>
      <div class="split">
        <ul id="apps-list" class="records" aria-label="Apps"></ul>
        <div id="app-detail" class="editor" aria-live="polite">
          <h2 id="app-title">Pick an App</h2>
          <p class="hint" id="app-description"></p>
          <p class="notice" id="app-managed" hidden></p>
          <p class="error" id="app-error" role="alert"></p>
          <section id="app-sections" hidden>
            <h3 id="app-hosts-title">Hosts</h3>
            <ul id="app-hosts" class="sessions" aria-labelledby="app-hosts-title"></ul>
            <p class="hint" id="app-sign-in"></p>
            <h3 id="app-policies-title">Policies</h3>
            <ul id="app-policies" class="sessions" aria-labelledby="app-policies-title"></ul>
            <p class="error" id="app-policies-error" role="alert"></p>
            <h3 id="app-refusals-title">Recent refusals</h3>
            <table class="sessions" id="app-refusals">
              <caption>The newest refusals the box kept, newest first</caption>
              <thead><tr><th scope="col">When</th><th scope="col">Status</th><th scope="col">Reason</th><th scope="col"><span class="visually-hidden">Explain</span></th></tr></thead>
              <tbody id="app-refusals-rows"></tbody>
            </table>
            <p class="error" id="app-refusals-error" role="alert"></p>
            <section id="app-explain" aria-labelledby="app-explain-title" hidden>
              <h3 id="app-explain-title">Why it was refused</h3>
              <p id="app-explain-verdict" class="verdict"></p>
              <table class="sessions">
                <caption>What each policy said, against the policies as they are now</caption>
                <thead><tr><th scope="col">Policy</th><th scope="col">Verdict</th><th scope="col">Why</th></tr></thead>
                <tbody id="app-explain-rows"></tbody>
              </table>
            </section>
          </section>
        </div>
      </div>
    </section>`;

const hooksPanel = html`
    <section role="tabpanel" id="panel-hooks" aria-labelledby="tab-hooks" hidden>
      <div class="toolbar">
        <label for="hooks-filter">Filter</label>
        <input type="search" id="hooks-filter" autocomplete="off" placeholder="part of a name">
        <button type="button" id="hooks-new">New hook</button>
      </div>
      <p class="error" id="hooks-error" role="alert"></p>
      <div class="split">
        <ul id="hooks-list" class="records" aria-label="Hooks"></ul>
        <form id="hook-form" class="editor" novalidate>
          <h2 id="hook-form-title">New hook</h2>
          <p class="notice" id="hook-managed" hidden></p>
          <fieldset class="field" id="hook-fields">
            <div class="field"><label for="hook-id">Name</label><input id="hook-id" name="id" type="text" autocomplete="off"><p class="error" id="hook-id-error" role="alert"></p></div>
            <div class="field"><label for="hook-description">Description</label><textarea id="hook-description" name="description" rows="2"></textarea><p class="error" id="hook-description-error" role="alert"></p></div>
            <fieldset class="field" id="hook-moments"><legend>Asked at</legend>${MOMENTS.map(
              ([value, label]) =>
                html`<label class="check" title="${value}"><input type="checkbox" name="moments" value="${value}"> ${label}</label>`,
            )}<p class="hint">Each box is a moment of the Hook resource (its name shows when pointed at).</p><p class="error" id="hook-moments-error" role="alert"></p></fieldset>
            <div class="field"><label for="hook-url">URL</label><input id="hook-url" name="url" type="text" inputmode="url" autocomplete="off" placeholder="https://hooks.example/token" aria-describedby="hook-url-hint"><p class="hint" id="hook-url-hint">An https URL; or leave it empty and name a Service of the cluster in Settings (service).</p><p class="error" id="hook-url-error" role="alert"></p></div>
            <div class="field"><label for="hook-failurePolicy">Failure policy</label><select id="hook-failurePolicy" name="failurePolicy"><option value="Fail">Fail: the moment is refused</option><option value="Ignore">Ignore: it goes on</option></select><p class="error" id="hook-failurePolicy-error" role="alert"></p></div>
            <div class="field"><label for="hook-settings">Settings</label><textarea id="hook-settings" name="settings" rows="8" spellcheck="false" placeholder='{"timeoutSeconds": 2, "boxToken": true, "matchConditions": [{"name": "people", "expression": "has(request.user)"}]}' aria-describedby="hook-settings-hint"></textarea><p class="hint" id="hook-settings-hint">The rest of the record, as JSON: service, caBundle, matchConditions, timeoutSeconds, maxInFlight, boxToken… (the Hook resource's fields).</p><p class="error" id="hook-settings-error" role="alert"></p></div>
            <div class="field"><label for="hook-secret">Signing secret</label><input id="hook-secret" name="secret" type="password" autocomplete="off" spellcheck="false" placeholder="whsec_…" aria-describedby="hook-secret-hint"><p class="hint" id="hook-secret-hint">A Standard Webhooks secret (whsec_ and base64). Never shown: empty keeps the one the box holds.</p><p class="error" id="hook-secret-error" role="alert"></p></div>
            <p class="error" id="hook-form-error" role="alert"></p>
            <div class="actions"><button type="submit">Save</button><button type="button" id="hook-delete" class="danger" disabled>Delete</button></div>
          </fieldset>
        </form>
      </div>
    </section>`;

export const boxTabPanels: Html = html`${clientsPanel}
${policiesPanel}
${appsPanel}
${hooksPanel}`;
