// Every environment variable of the box and of the operator, what it defaults to
// and what it means: the lists `--help` prints and docs/reference/configuration.md
// is generated from (`make docs`). api/config.ts and operator/config.ts parse them;
// test/unit/docs/reference.test.ts fails when a variable read there is missing
// here, or listed here and read nowhere.

export interface ConfigVariable {
  /** One variable, or several that go together (BOXAUTH_TLS_CERT_FILE / BOXAUTH_TLS_KEY_FILE). */
  names: string[];
  /** As Markdown: code in backquotes. */
  default: string;
  meaning: string;
}

export const CONFIG_VARIABLES: ConfigVariable[] = [
  {
    names: ['BOXAUTH_PORT'],
    default: '`8080`',
    meaning: 'HTTP port',
  },
  {
    names: ['BOXAUTH_HOST'],
    default: '`0.0.0.0`',
    meaning: 'listen address',
  },
  {
    names: ['BOXAUTH_METRICS_PORT'],
    default: '`9464`',
    meaning: 'where `GET /metrics` is served for Prometheus (not on the API port)',
  },
  {
    names: ['BOXAUTH_GRPC_PORT'],
    default: '`9001`',
    meaning:
      "where the decision point serves Envoy's gRPC external authorization (`envoy.service.auth.v3.Authorization/Check`, as Istio `CUSTOM` and Envoy Gateway call it); `0`: not served. With TLS (below) it is served over TLS with the same certificate",
  },
  {
    names: ['BOXAUTH_GATE_BODY_BYTES'],
    default: '`65536`',
    meaning:
      "the most of a request's body the decision point reads when a gateway sends it (Envoy's `with_request_body`, the HTTP door, NGINX reading it first), for its JSON-RPC envelope only ([per-tool decisions](../guides/guard-your-apps.md#per-tool-decisions-for-mcp-servers)); from 1024 to 524288. A longer body, or one the gateway cut (`allow_partial_message`), is refused with 413: set the gateway's own limit (Envoy's `max_request_bytes`) to the same number",
  },
  {
    names: ['BOXAUTH_BASE_URL'],
    default: '`http://localhost:$BOXAUTH_PORT` (`https://\u2026` with TLS)',
    meaning: "the box's public URL: JWT `iss`, redirects, metadata. Every process of one box must share it",
  },
  {
    names: ['BOXAUTH_TLS_CERT_FILE', 'BOXAUTH_TLS_KEY_FILE'],
    default: '\u2014',
    meaning:
      'serve HTTPS with this PEM certificate (chain) and key; both or neither. The files are read again when they change (checked every second), so a renewed certificate is served without a restart; a pair that does not load is logged and the previous one kept',
  },
  {
    names: ['BOXAUTH_BOX'],
    default: '`default`',
    meaning: 'box name (logs, metrics, CLI)',
  },
  {
    names: ['DATABASE_URL'],
    default: 'embedded PostgreSQL',
    meaning:
      "a `postgres://` URL. The box's tables go to the connection's default schema. Several hosts in libpq's form (`postgres://u:p@db-1:5432,db-2:5432/boxauth`): the box writes to the one that accepts writes and follows a failover by itself; `target_session_attrs` is `read-write` (the default), `primary` or `any`; `load_balance_hosts=random` tries them in random order (docs/operations/high-availability.md)",
  },
  {
    names: ['BOXAUTH_DATABASE_DIRECT_URL'],
    default: '`DATABASE_URL`',
    meaning:
      'the same database reached directly, when `DATABASE_URL` goes through a transaction-mode pooler (PgBouncer): the change feed (`LISTEN`), the upkeep (a lease held by its connection) and migrations connect here. Several hosts as in `DATABASE_URL`',
  },
  {
    names: ['BOXAUTH_DATABASE_PREPARED_STATEMENTS'],
    default: '`true`; `false` with `BOXAUTH_DATABASE_DIRECT_URL`',
    meaning:
      'whether the statements of the hot paths are prepared once per connection. Through a transaction-mode PgBouncer they must not be (a statement prepared on one server connection is unknown on the next), unless it is 1.21 or later with `max_prepared_statements` above 0: then `true` saves a parse per query',
  },
  {
    names: ['BOXAUTH_DATABASE_CONNECT_TIMEOUT_MS'],
    default: '`3000`',
    meaning:
      'the deadline of a database connection and of the check, every second, that the host in use still accepts writes; a host silent for two checks is given up and its connections cut',
  },
  {
    names: ['BOXAUTH_DATABASE_STATEMENT_TIMEOUT_MS'],
    default: '`5000`',
    meaning:
      "the longest one statement of a request may run (a `COMMIT` waiting for a synchronous standby included) before it is canceled and the request answered `503`; `0`: no deadline. A commit whose standby's confirmation was canceled is a `503`, never a success",
  },
  {
    names: ['BOXAUTH_OUTAGE_MEMORY_SECONDS'],
    default: '`60`',
    meaning:
      'while the database is unreachable, the tokens, sessions, clients, users, policies and apps this process knew when it lost the database answer from memory for this long (introspection, the decision point, token checks); `0`: everything that needs the database answers `503`',
  },
  {
    names: ['BOXAUTH_DATA_DIR'],
    default: '`.boxauth`',
    meaning: 'embedded database and generated credentials',
  },
  {
    names: ['BOXAUTH_ROOT_CLIENT_ID'],
    default: '`root`',
    meaning: 'a `client_credentials` client with an `allow` policy, created at start-up when missing',
  },
  {
    names: ['BOXAUTH_ROOT_CLIENT_SECRET'],
    default: 'generated',
    meaning:
      'its secret, applied at every start when set; when unset, generated once into `$BOXAUTH_DATA_DIR/root-client.json` (mode 0600) when the client is created',
  },
  {
    names: ['BOXAUTH_ADMIN_EMAIL', 'BOXAUTH_ADMIN_PASSWORD'],
    default: '`admin@localhost` / generated',
    meaning: 'the first admin user, created once (a password changed later stays changed; a deleted admin is not created again)',
  },
  {
    names: ['BOXAUTH_PASSWORD_MIN_LENGTH'],
    default: '`8`',
    meaning:
      "the fewest characters of a new password, `8` to `64` (12 or more is suggested). Whatever it is, a new password is also refused when it is one of the most used passwords, too much like the email address or the box's name, or repeated or sequential characters; no rule of composition, no expiry (NIST SP 800-63B §5.1.1.2, docs/security.md). Passwords already set are not affected, and the first admin's `BOXAUTH_ADMIN_PASSWORD` is only warned about in the log",
  },
  {
    names: ['BOXAUTH_BRAND_NAME'],
    default: 'unset',
    meaning:
      'the name people see on the pages (in place of "boxauth · *box*"), in the mails\' sender and signature, and in the admin console\'s header; at most 64 characters, no control or invisible characters (Box `spec.branding.displayName`, docs/guides/branding-and-languages.md)',
  },
  {
    names: ['BOXAUTH_BRAND_LOGO_URL'],
    default: 'unset',
    meaning:
      "the logo beside the name: an `https` URL (`http` only on `localhost`), whose origin, and only it, the pages' Content-Security-Policy then allows in `img-src`; or a base64 `data:image/png|jpeg|gif|webp|svg+xml` URI of at most 32768 characters, which needs no other host",
  },
  {
    names: ['BOXAUTH_BRAND_PRIMARY_COLOR', 'BOXAUTH_BRAND_BACKGROUND_COLOR'],
    default: 'unset',
    meaning:
      'the colour of buttons and links, and of the page around the card, each `#rrggbb`; white text on the primary colour must keep a contrast of 4.5:1 (WCAG 1.4.3), or the box does not start',
  },
  {
    names: ['BOXAUTH_BRAND_SUPPORT_URL'],
    default: 'unset',
    meaning:
      'where a person finds help, linked from every page and mail: an `https` URL (`http` only on `localhost`) or a `mailto:` address',
  },
  {
    names: ['BOXAUTH_REGISTRATION'],
    default: '`false`',
    meaning: 'self sign-up on the sign-in page',
  },
  {
    names: ['BOXAUTH_REGISTRATION_GROUP'],
    default: '`users`',
    meaning: 'the group people who sign up join',
  },
  {
    names: ['BOXAUTH_REGISTRATION_VERIFY'],
    default: '`before-sign-in` with mail configured, else `after-sign-in`',
    meaning:
      'when a person who signed up proves their address: `before-sign-in` (the sign-up page answers alike whether or not the address has an account, and the account opens when the mailed link is followed) or `after-sign-in` (signed in at once, the link mailed when mail is configured; a taken address is said to be taken). `before-sign-in` needs `BOXAUTH_SMTP_URL`',
  },
  {
    names: ['BOXAUTH_MAIL_MAX_PER_RECIPIENT', 'BOXAUTH_RESET_MAX_PER_ADDRESS', 'BOXAUTH_MAIL_WINDOW_SECONDS'],
    default: '`5` / `20` / `3600`',
    meaning:
      'per window: the mails one email address may be sent on request (password resets, verification links asked again, sign-in codes), and the password resets one network address may ask for; then the page answers `429`, alike for addresses with and without an account. A browser that signed in as the person before (its device cookie) has the per-address limit of its own for sign-in codes, so strangers cannot spend it; the window also bounds new recovery codes a person makes (10 in it)',
  },
  {
    names: ['BOXAUTH_SIGN_UP_MAX_PER_ADDRESS', 'BOXAUTH_SIGN_UP_ADDRESS_WINDOW_SECONDS'],
    default: '`10` / `3600`',
    meaning:
      'sign-ups one address may make per window, counted for the whole box (all its processes); then the sign-up page answers `429` with `Retry-After`',
  },
  {
    names: ['BOXAUTH_SIGN_UP_MAX_PER_BOX', 'BOXAUTH_SIGN_UP_BOX_WINDOW_SECONDS'],
    default: '`100` / `600`',
    meaning: 'sign-ups the whole box takes per window, whatever the addresses; then `429` with `Retry-After`',
  },
  {
    names: ['BOXAUTH_SIGN_UP_MAX_WAITING'],
    default: '`4`',
    meaning:
      'sign-up password hashes that may wait per box, behind every other argon2 run of the box; beyond, the sign-up page answers `503` with `Retry-After: 1`',
  },
  {
    names: ['BOXAUTH_SMTP_URL'],
    default: 'none: no mail',
    meaning:
      "the SMTP server the box sends its mail through ([email](../guides/email.md)): `smtp://user:password@host:587` upgrades with STARTTLS and refuses to send in the clear, except to a loopback host (`localhost`, `127.0.0.1`, `::1`); `smtps://user:password@host:465` speaks TLS from the start. The server's certificate is checked against the system's CAs and `NODE_EXTRA_CA_CERTS` (a PEM file of more, e.g. a private CA). Unset: the box sends no mail, and its reset page tells people to ask an administrator",
  },
  {
    names: ['BOXAUTH_SMTP_FROM'],
    default: '\u2014 (needed with `BOXAUTH_SMTP_URL`)',
    meaning: 'the mailbox the mail comes from, e.g. `boxauth <no-reply@example.com>`: one address, on one line',
  },
  {
    names: ['BOXAUTH_SMTP_PASSWORD'],
    default: "the URL's password",
    meaning:
      "the SMTP password, instead of one in the URL (e.g. from a Kubernetes Secret: the operator sets it from `Box.spec.smtp.passwordSecretRef`). Never logged; the URL's user name is the user",
  },
  {
    names: ['BOXAUTH_MAIL_TEMPLATES'],
    default: 'built-in English and German templates',
    meaning:
      'a directory of templates that override the built-in ones, per kind and language (`password-reset.txt`, `password-reset.de.html`, \u2026; [the format](../guides/email.md#templates-and-languages)). A template that names an unknown placeholder stops the start',
  },
  {
    names: ['BOXAUTH_SMTP_SIGN_IN_CODES'],
    default: '`off`',
    meaning:
      'what sign-in codes by email the box offers: `off`; `second-factor`, people may set them up as their second factor ([second factors](../guides/second-factors.md#getting-codes-by-email)); `first-step`, that and, for people without a password, a code instead of one ([a code instead of a password](../guides/second-factors.md#a-code-instead-of-a-password)). `Box.spec.smtp.signInCodes`; `true` and `false` are read as `second-factor` and `off`. Off in the release that brought them: turn it on once no pod of the release before serves, since that release counts no such factor and would let a person whose only factor it is in with a password alone ([upgrades](../operations/upgrades.md#a-new-kind-expand-then-offer)). Codes already set up work either way',
  },
  {
    names: ['BOXAUTH_MAIL_LEASE_SECONDS'],
    default: '`300`',
    meaning:
      'how long a process that took a mail from the outbox has to send it before another process (or itself, restarted) may take it over: a process killed while sending loses no mail, and sends it late by at most this. A send is given up after half of it (its connection, greeting and idle timeouts within it) and retried later',
  },
  {
    names: ['BOXAUTH_BROWSER_SESSION_HOURS'],
    default: '`12`',
    meaning: 'how long a signed-in browser stays signed in',
  },
  {
    names: ['BOXAUTH_AUTH_CODE_TTL_SECONDS'],
    default: '`60`',
    meaning: 'lifetime of an authorization code',
  },
  {
    names: ['BOXAUTH_SIGN_IN_MAX_FAILURES', 'BOXAUTH_SIGN_IN_WINDOW_SECONDS'],
    default: '`5` / `900`',
    meaning: 'sign-in attempts checked per account per window (an address may fail 4\u00d7 as often); then 429',
  },
  {
    names: ['BOXAUTH_CLIENT_AUTH_MAX_FAILURES', 'BOXAUTH_CLIENT_AUTH_WINDOW_SECONDS'],
    default: '`10` / `60`',
    meaning:
      "failed client authentications per client id per window, per process (an address: 4\u00d7 as many); then `429` with `Retry-After`. A wrong secret counts for its client id and its address; a request naming a client by `client_id` alone that fails, and a refused `private_key_jwt` assertion, count for the address only (counted per client id, a stranger's made-up ones would lock the client's owner out)",
  },
  {
    names: ['BOXAUTH_DEVICE_CODES_PER_ADDRESS'],
    default: '`30`',
    meaning: 'device codes (`POST /auth/device`) one address may ask for in 10 minutes, per process; then `429` with `Retry-After`',
  },
  {
    names: ['BOXAUTH_UPSTREAM_STARTS_PER_ADDRESS'],
    default: '`100`',
    meaning:
      "sign-ins at upstream providers (`POST /auth/upstream/<id>/start`, each a row waiting for the provider's answer) one address may begin in 10 minutes, counted in the database (all processes of the box); then `429` with `Retry-After`",
  },
  {
    names: ['BOXAUTH_ARGON2_MAX_WAITING'],
    default: '`32`',
    meaning:
      "argon2 checks that may wait per box and kind (sign-in, writing a secret, a client secret); beyond, `503` with `Retry-After: 1`. A check whose client has hung up leaves the queue. In a host each box has its own queues, and the boxes take turns at the process's two argon2 runs",
  },
  {
    names: ['BOXAUTH_HSTS_MAX_AGE', 'BOXAUTH_HSTS_INCLUDE_SUBDOMAINS'],
    default: '`31536000` (a year) / `false`',
    meaning:
      "with an https base URL, every answer carries `Strict-Transport-Security: max-age=\u2026` (RFC 6797), `; includeSubDomains` only when asked (it binds every host under the box's name). `0` tells browsers to forget it: for a box on `https://localhost`, whose HSTS would hold every `localhost` port to https",
  },
  {
    names: ['BOXAUTH_TRUSTED_PROXIES'],
    default: 'none',
    meaning:
      'addresses or CIDRs (`10.0.0.0/8, fd00::/8`) of proxies whose `X-Forwarded-For` is believed; without them the address a request comes from is its TCP peer',
  },
  {
    names: ['BOXAUTH_CLIENT_CA_FILE'],
    default: '\u2014',
    meaning:
      'mutual TLS (RFC 8705): a PEM bundle of the CAs whose client certificates `tls_client_auth` accepts (read at start); the chain is judged by the box, whoever terminated TLS. Unset: `tls_client_auth` is not offered ([Mutual TLS](../guides/workloads-without-secrets.md#mutual-tls))',
  },
  {
    names: ['BOXAUTH_TLS_CLIENT_CERTIFICATES'],
    default: '`off`',
    meaning:
      '`request`: the TLS the box serves itself (`BOXAUTH_TLS_CERT_FILE`) asks every client for a certificate, and requires none, so a browser is never refused for having none; `off`: asks none',
  },
  {
    names: ['BOXAUTH_CLIENT_CERT_HEADER'],
    default: '\u2014',
    meaning:
      "the header a proxy in front forwards the client's certificate in: `x-forwarded-client-cert` is read as Envoy's XFCC (its last element's `Cert`), any other as URL-encoded PEM (NGINX's `$ssl_client_escaped_cert`) or base64 DER (Traefik's `X-Forwarded-Tls-Client-Cert`, Caddy's `certificate_der_base64`). Read by the token endpoint, the box's API and the decision point's HTTP doors. Believed only from `BOXAUTH_TRUSTED_PROXIES` (required with it); from any other address the request is refused with 400",
  },
  {
    names: ['BOXAUTH_JWT_ALG'],
    default: '`ES256`',
    meaning:
      'the algorithm of JWT access tokens: `ES256`, `RS256` or `EdDSA` (ID tokens are RS256 unless their client chooses; the box keeps a key of each)',
  },
  {
    names: ['BOXAUTH_SIGNING_KEY'],
    default: '\u2014',
    meaning:
      'a PEM private key (EC P-256, RSA \u2265 2048, Ed25519) to sign with instead of generated keys (e.g. from a Kubernetes Secret)',
  },
  {
    names: ['BOXAUTH_FACTOR_KEY'],
    default: 'generated into `$BOXAUTH_DATA_DIR/factor-key`',
    meaning:
      '32 random bytes in base64 (`openssl rand -base64 32`): the key TOTP secrets are sealed with (AES-256-GCM). Every process of a box needs the same one; the box refuses to start with another key than the one it sealed with',
  },
  {
    names: ['BOXAUTH_KEY_ROTATION_DAYS'],
    default: '`30`',
    meaning: 'a generated signing key older than this is replaced; `0` never',
  },
  {
    names: ['BOXAUTH_WORKERS'],
    default: '`1`',
    meaning: 'worker processes sharing the port; `auto` = one per CPU',
  },
  {
    names: ['BOXAUTH_HOSTED_BOXES'],
    default: 'unset: this process serves one box',
    meaning:
      'a JSON file listing boxes (their host names and their variables): set, this process is a host that serves all of them, each at its own issuer URL, opening a box on its first request and closing it when idle ([hosted boxes](../kubernetes/hosted-boxes.md)); the operator writes it for `Box.spec.serving: Hosted`',
  },
  {
    names: ['BOXAUTH_HOST_IDLE_SECONDS'],
    default: '`60`',
    meaning: 'a hosted box without a request for this long is closed: its database connections, change feed and caches are let go',
  },
  {
    names: ['BOXAUTH_HOST_BOX_CONCURRENCY'],
    default: '`32`',
    meaning:
      "a hosted box's requests in flight at once; more wait in the box's own line, so that one box's load holds another's by no more than that many requests",
  },
  {
    names: ['BOXAUTH_HOST_BOX_QUEUE'],
    default: '`256`',
    meaning: "a hosted box's requests waiting at most; more are answered 503 with Retry-After",
  },
  {
    names: ['BOXAUTH_HOST_PREPARE_CONCURRENCY'],
    default: '`2`',
    meaning: 'hosted boxes prepared at once (migrations, signing keys, root client and admin) when they appear in the registry',
  },
  {
    names: ['BOXAUTH_DB_POOL_SIZE'],
    default: '`10`',
    meaning: 'database connections per worker',
  },
  {
    names: ['BOXAUTH_SESSION_RETENTION_HOURS'],
    default: '`24`',
    meaning: 'how long closed or expired sessions stay readable before the purge job deletes them',
  },
  {
    names: ['BOXAUTH_DECISION_RETENTION_HOURS'],
    default: '`24`',
    meaning:
      'how long refused decisions of the decision point are kept in the database for `boxauth explain <id>` (`GET /authz/decisions/<id>`); `0` keeps none past the next purge. Only the refusals of an identified caller (a live token or cookie, an AuthZEN subject) are kept, at most 50 a second per process and 5 of one caller (a user, else a client), each as an excerpt of at most 4,096 characters of request (strings cut at 256): a stranger cannot fill the database, nor one caller crowd out the others; every decision is in the audit log ([what is kept](../guides/guard-your-apps.md#why-a-request-was-refused-boxauth-explain))',
  },
  {
    names: ['BOXAUTH_DECISION_MAX_ROWS'],
    default: '`100000`',
    meaning:
      'at most this many refused decisions are kept: each purge run deletes the oldest beyond (counted as `boxauth_decisions_not_kept_total{why="cap"}`, alert `BoxauthDecisionRecordsFull`). With excerpts of at most about 10 kB a row, 100,000 rows stay under about 1 GB',
  },
  {
    names: ['BOXAUTH_AUDIT_ALLOWED_DECISION_SAMPLE'],
    default: '`1`',
    meaning:
      'one allowed decision of the decision point in this many has its `decision` audit line, per process, with `"sampled": N` so that a log pipeline can weigh it; `1` logs every one. Refusals are never sampled: each has its line. `boxauth_decisions_total` counts every decision. An allowed decision\'s line (about 1 kB with 20 policies) costs the box about a fifth of its CPU per decision ([Performance](../performance.md#the-decision-point-make-bench)); allowed decisions are in the log only, never in the audit trail ([Audit](../operations/audit.md))',
  },
  {
    names: ['BOXAUTH_AUDIT_RETENTION_DAYS'],
    default: '`90`',
    meaning:
      "how long the audit trail keeps its events (`GET /AuditEvent`, `boxauth events`, the admin console's Events tab); `0` keeps none past the next purge. The log lines of the same events are not concerned ([Audit](../operations/audit.md))",
  },
  {
    names: ['BOXAUTH_AUDIT_MAX_ROWS'],
    default: '`1000000`',
    meaning:
      'at most this many audit events are kept: each purge run deletes the oldest beyond, changes last: a flood of refusals or sign-ins keeps the newest of them and never pushes out a change ([Audit](../operations/audit.md#the-audit-trail); counted as `boxauth_audit_events_not_kept_total{why="cap"}`, alert `BoxauthAuditTrailFull`). An event is about 0.5 kB with its indexes: 1,000,000 rows are about 500 MB',
  },
  {
    names: ['BOXAUTH_DPOP_NONCE'],
    default: '`off`',
    meaning:
      '`required`: every DPoP proof (RFC 9449), at the token endpoint and at the resources (the box API, UserInfo, the decision point), must carry a nonce the box handed out in a `DPoP-Nonce` header; a proof without one is answered `use_dpop_nonce` with a fresh nonce to retry with. Nonces are stateless (an HMAC of a 5-minute window under a key every process of the box shares) and good for up to two windows. `off`: proofs need no nonce; replayed proofs are refused either way (their `jti`, in a table every process shares)',
  },
  {
    names: ['BOXAUTH_PUBLIC_SUBJECTS'],
    default: '`sequential` on a box that had people before release 036, `opaque` on one that had none',
    meaning:
      'what the `sub` of a person is for clients with `subject_type: public` (the default): `sequential`, their row id (what every box handed out before; it tells a client how many people the box has); `opaque`, a random id made with the person, the same for every such client. Unset: what the box recorded when it met the release that brought the choice. Changing it changes every public `sub` at once: clients that key people by `sub` see new people. Clients with `subject_type: pairwise` get a `sub` of their own either way ([subject types](../guides/openid-connect.md#subject-types)). `Box.spec.publicSubjects`',
  },
  {
    names: ['BOXAUTH_CLIENT_METADATA_ALLOWED_ADDRESSES'],
    default: 'none',
    meaning:
      "addresses or CIDRs (`127.0.0.1/32`) the box may fetch a Client ID Metadata Document from although they are special-use (RFC 6890: loopback, link-local, private ranges) or the box's own; never in production (the draft's §8.6). Without it such an address is refused after the name is resolved, and the box's own URL always is (docs/guides/agents.md). The same guard holds a client's `jwks_uri`, its `sector_identifier_uri` and a SAML app's metadata URL; their servers' certificates are checked against the system's CAs and `NODE_EXTRA_CA_CERTS` (a PEM file of more, read at start, for every connection of the process: there is no per-client CA)",
  },
  {
    names: ['BOXAUTH_NOTICES'],
    default: '`true`',
    meaning:
      "`false`: no notice leaves the box (no back-channel logout token, Shared Signals event or webhook) and audit events are not written to the outbox of notices. Otherwise every process dispatches the outbox's events and sends its notices (docs/operations/notices.md)",
  },
  {
    names: ['BOXAUTH_NOTICE_ALLOWED_ADDRESSES'],
    default: 'none',
    meaning:
      "addresses or CIDRs (`10.0.0.0/8`, `127.0.0.1/32`) a receiver of notices (a back-channel logout URI, an SSF push URL, a Webhook's URL) may be at although they are special-use (RFC 6890: loopback, link-local, private ranges) or the box's own; plain `http` only to these. An administrator adds more at runtime (`PUT /settings/notices`); every send checks the addresses a URL resolves to then, and a stream's push URL is also checked when written (docs/operations/notices.md)",
  },
  {
    names: ['BOXAUTH_NOTICE_TIMEOUT_MS'],
    default: '`10000`',
    meaning: 'the deadline of one attempt to send a notice, connection to answer; a receiver slower than this is tried again later',
  },
  {
    names: ['BOXAUTH_NOTICE_SENDING_AT_ONCE'],
    default: '`16`',
    meaning:
      'notices one process sends at once, at most a quarter of them to one destination; of one destination and one subject (a person, or the record a Webhook event is about) one at a time across all processes, in the order they were made',
  },
  {
    names: ['BOXAUTH_NOTICE_FIRST_RETRY_SECONDS', 'BOXAUTH_NOTICE_LONGEST_RETRY_SECONDS'],
    default: '`5`, `900`',
    meaning:
      "the wait after a notice's first failed attempt, doubling after each failure up to the longest; its destination's later notices wait behind it. A notice is given up after its kind's time (an audit event `notice` `given-up`)",
  },
  {
    names: ['BOXAUTH_CLIENT_METADATA_TIMEOUT_MS'],
    default: '`3000`',
    meaning:
      'the longest a fetch of a Client ID Metadata Document may take, connection to last byte; the document may hold at most 5 KiB and is never taken from a redirect',
  },
  {
    names: ['BOXAUTH_CLIENT_METADATA_MIN_CACHE_SECONDS', 'BOXAUTH_CLIENT_METADATA_MAX_CACHE_SECONDS'],
    default: '`60` / `86400`',
    meaning:
      'the bounds of how long a fetched Client ID Metadata Document stands (its `Cache-Control: max-age` or `Expires`; `no-store`, `no-cache`: the least; nothing said: the most). The first authorization request after it fetches the document again and rewrites the client',
  },
  {
    names: ['BOXAUTH_DYNAMIC_REGISTRATION'],
    default: '`false`',
    meaning:
      'serve dynamic client registration (RFC 7591) at `POST /auth/register` and name it in the metadata (`registration_endpoint`); each registration is admitted by an AccessPolicy (`registration.kind: dynamic`), deny by default (docs/guides/agents.md)',
  },
  {
    names: ['BOXAUTH_DYNAMIC_REGISTRATION_PER_ADDRESS'],
    default: '`10`',
    meaning: 'registrations one network address may make in an hour, counted in the database (every process of the box); beyond, `429`',
  },
  {
    names: ['BOXAUTH_DYNAMIC_REGISTRATION_UNUSED_HOURS'],
    default: '`24`',
    meaning:
      'a dynamically registered client that has no session (no person let it in) this long after its registration is removed by the upkeep',
  },
  {
    names: ['BOXAUTH_PURGE_INTERVAL_SECONDS'],
    default: '`300`',
    meaning: 'how often the purge job runs',
  },
  {
    names: ['BOXAUTH_SHUTDOWN_TIMEOUT_MS'],
    default: '`10000`',
    meaning: 'on SIGTERM, how long requests in flight may take before connections are cut',
  },
  {
    names: ['BOXAUTH_SHUTDOWN_DELAY_MS'],
    default: '`0`',
    meaning:
      "on SIGTERM, how long the server goes on accepting connections before it stops listening, answering `/readyz` with 503 and every request with `Connection: close` (clients move to another replica on their next request); a box's pods get `2000` from the operator",
  },
  {
    names: ['BOXAUTH_LOG_LEVEL'],
    default: '`info`',
    meaning: '`trace` \u2026 `fatal`',
  },
  {
    names: ['OTEL_TRACES_EXPORTER'],
    default: '`none`',
    meaning:
      "`otlp`: export [traces](../operations/traces.md) over OTLP/HTTP (protobuf) with the OpenTelemetry SDK: a span per request at every door, with children for client authentication, each policy evaluated, decisions and outbound calls, continuing the caller's `traceparent`; `none`: off, nothing of the SDK is loaded",
  },
  {
    names: ['OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'],
    default: '`http://localhost:4318` / that + `/v1/traces`',
    meaning: "the collector's OTLP/HTTP address; the second, when set, is the whole URL spans are POSTed to",
  },
  {
    names: ['OTEL_TRACES_SAMPLER', 'OTEL_TRACES_SAMPLER_ARG'],
    default: '`parentbased_always_on` / `1`',
    meaning:
      "which traces are kept: `always_on`, `always_off`, `traceidratio`, or `parentbased_` one of them (a request that comes with a `traceparent` follows its caller's choice); the argument is the ratio of the `traceidratio` samplers, 0 to 1 (`0.01`: 1 %)",
  },
  {
    names: ['OTEL_SERVICE_NAME'],
    default: '`boxauth`',
    meaning: "the spans' `service.name` (each span names its box in `boxauth.box`)",
  },
  {
    names: ['OTEL_SDK_DISABLED'],
    default: '`false`',
    meaning: '`true`: no traces, whatever `OTEL_TRACES_EXPORTER` says',
  },
  {
    names: ['BOXAUTH_TRUSTED_ISSUERS'],
    default: '`[]`',
    meaning:
      'issuers of workload tokens the box trusts (ServiceAccount tokens of other clusters, CI tokens: `auth.workload` of a Client), as JSON: `[{"issuer": "https://\u2026", "jwksUri"?: "https://\u2026", "mode"?: "jwks" | "tokenreview", "caBundle"?: "<PEM>", "allowedAddresses"?: ["10.0.0.1", "fd00::/8"]}]` (the operator writes it from `Box.spec.trustedIssuers`). Their discovery documents and keys are fetched through the same guard as Client ID Metadata Documents: never from a special-use address (loopback, private, link-local) or the box\u2019s own, unless the issuer\u2019s `allowedAddresses` allow it',
  },
  {
    names: ['BOXAUTH_SPIFFE_TRUST_DOMAINS'],
    default: '`[]`',
    meaning:
      'SPIFFE trust domains whose JWT-SVIDs authenticate Clients bound to their SPIFFE IDs (`auth.spiffe`, client_assertion_type `urn:ietf:params:oauth:client-assertion-type:jwt-spiffe`), as JSON: `[{"trustDomain": "prod.example", "bundleEndpointUrl": "https://\u2026", "caBundle"?: "<PEM>", "allowedAddresses"?: ["10.96.0.0/12"]}]`; the bundle endpoint is fetched through the guard for addresses others name, special-use addresses refused unless listed in `allowedAddresses` (the operator writes it from `Box.spec.spiffeTrustDomains`)',
  },
  {
    names: ['BOXAUTH_CLUSTER_ISSUER'],
    default: '`auto`',
    meaning:
      '`auto`: in a cluster, trust its service-account issuer (discovered from the API server, keys from `/openid/v1/jwks`); `tokenreview`: trust it through TokenReview; `off`',
  },
  {
    names: ['BOXAUTH_KUBE_API_URL', 'BOXAUTH_KUBE_TOKEN_FILE', 'BOXAUTH_KUBE_CA_FILE'],
    default: 'in-cluster values',
    meaning:
      "how the box reaches its cluster's API server (default: `KUBERNETES_SERVICE_HOST`/`_PORT` and the Pod's service-account token and CA)",
  },
];

/** The operator's (`make operator`, the chart's Deployment): operator/config.ts parses them. */
export const OPERATOR_CONFIG_VARIABLES: ConfigVariable[] = [
  {
    names: ['DATABASE_URL'],
    default: "`make run`'s embedded PostgreSQL",
    meaning:
      'a `postgres://` URL where box databases (or schemas) and roles are created: a superuser, or a role with `CREATEROLE` (and `CREATEDB`, for databases of their own) that owns the database',
  },
  {
    names: ['BOXAUTH_DATA_DIR'],
    default: '`.boxauth`',
    meaning: 'where that embedded PostgreSQL is kept when `DATABASE_URL` is unset (shared with `make run`)',
  },
  {
    names: ['BOXAUTH_OPERATOR_BOX_DATABASE_HOST'],
    default: 'the host of `DATABASE_URL`',
    meaning: '`host[:port]` the box API pods reach that database at',
  },
  {
    names: ['BOXAUTH_OPERATOR_BOX_DATABASE_POOLER_HOST'],
    default: 'none',
    meaning:
      "`host[:port]` of a PgBouncer in transaction mode in front of that database (a CloudNativePG Pooler's Service): the box API pods send their queries there (`DATABASE_URL`), and reach the database itself only for the change feed and migrations (`BOXAUTH_DATABASE_DIRECT_URL`). Boxes with `spec.database` are not concerned",
  },
  {
    names: ['BOXAUTH_OPERATOR_BOX_ISOLATION'],
    default: '`Database`',
    meaning:
      "where a new box goes, there and through a Box's `spec.database.secretRef`: `Database`, a database of its own, owned by the box's role and closed to every other (the operator's user needs `CREATEDB`); `Schema`, a schema of that database, beside the other boxes, whose roles then read its schema, table and statistics names in the catalogs. A box keeps living where it was made, whatever the setting (`status.database.isolation`; [moving one](../guides/upgrading.md#a-database-of-its-own-for-each-box)). A Box naming a CloudNativePG Cluster has the Cluster's database ([what a box's role reaches](../kubernetes/resources.md))",
  },
  {
    names: ['BOXAUTH_OPERATOR_BOX_IMAGE'],
    default: '`boxauth:dev`',
    meaning: "the image of the box API Deployments (the chart sets it: its `boxImage`, else the operator's own image)",
  },
  {
    names: ['BOXAUTH_OPERATOR_BOX_IMAGE_PULL_POLICY'],
    default: '`IfNotPresent`',
    meaning: 'their `imagePullPolicy`: `Always`, `IfNotPresent` or `Never`',
  },
  {
    names: ['BOXAUTH_OPERATOR_PIN_BOX_IMAGE'],
    default: '`false`',
    meaning:
      "`true`: every box runs `BOXAUTH_OPERATOR_BOX_IMAGE`, and a Box whose `spec.image` names another is refused (`Ready=False`, `Stalled=True`, reason `ImageNotAllowed`) with nothing made or changed (the chart's `boxImage.pinned`). `false`: whoever may write a Box chooses the code its pods run ([who may write what](../kubernetes/install.md#who-may-write-what))",
  },
  {
    names: ['BOXAUTH_HOST_REPLICAS'],
    default: '`2`',
    meaning:
      "the replicas of the host (the Deployment `boxauth-host` in the operator's namespace, made while a Box has `spec.serving: Hosted`), 1 to 100, or `auto`: the operator sets none and leaves them to whoever scales the host, a HorizontalPodAutoscaler (the chart's `hosts.replicas`; [hosted boxes](../kubernetes/hosted-boxes.md#scaling-the-host-with-an-hpa))",
  },
  {
    names: ['BOXAUTH_HOST_RESOURCES'],
    default: '`{"requests":{"cpu":"100m","memory":"256Mi"},"limits":{"memory":"1Gi"}}`',
    meaning: "the host container's resources, as JSON of `requests` and `limits` (the chart's `hosts.resources`)",
  },
  {
    names: ['BOXAUTH_OPERATOR_HOST_URL'],
    default: '`http://boxauth-host.<namespace>.svc:8080`',
    meaning:
      "where the operator asks the host whether it answers for a box (`GET /readyz` with the box's name as `Host`) before it points the box's Service at the host: the host's Service. Set it when the operator runs outside the cluster (`make operator`), e.g. to a `kubectl port-forward` of that Service",
  },
  {
    names: ['BOXAUTH_OPERATOR_TOKEN_REVIEW_BINDING'],
    default: '`boxauth-operator-token-review`',
    meaning:
      'the ClusterRoleBinding of `system:auth-delegator` the chart makes (`<release>-operator-token-review`), whose subjects the operator keeps: the ServiceAccount of each box whose tokens the API server reviews (TokenReview). The operator may read and update that binding only, and create or delete none',
  },
  {
    names: ['BOXAUTH_OPERATOR_NAMESPACE'],
    default: "`$POD_NAMESPACE`, else the pod's or the kubeconfig context's",
    meaning: 'the namespace of the leader Lease',
  },
  {
    names: ['BOXAUTH_OPERATOR_LEASE_NAME'],
    default: '`boxauth-operator`',
    meaning: 'the name of the leader Lease',
  },
  {
    names: ['BOXAUTH_OPERATOR_LEASE_SECONDS'],
    default: '`15`',
    meaning: 'the lease duration (2 to 600): a standby takes over this long after the leader stops renewing',
  },
  {
    names: ['BOXAUTH_OPERATOR_ID'],
    default: '`$POD_NAME`, else host-pid',
    meaning: "this replica's identity in the Lease",
  },
  {
    names: ['BOXAUTH_OPERATOR_RESYNC_SECONDS'],
    default: '`60`',
    meaning: 'period of the pass that repairs drift in box databases, a slice of the namespaces each second',
  },
  {
    names: ['BOXAUTH_OPERATOR_RELIST_SECONDS'],
    default: '`600`',
    meaning: "period of the informers' full relists",
  },
  {
    names: ['BOXAUTH_OPERATOR_WATCH_IDLE_SECONDS'],
    default: '`120`',
    meaning: 'a watch silent this long is cut and relisted',
  },
  {
    names: ['BOXAUTH_OPERATOR_WORKERS'],
    default: '`4`',
    meaning: 'concurrent reconciles per kind (1 to 64)',
  },
  {
    names: ['BOXAUTH_OPERATOR_HEALTH_PORT', 'BOXAUTH_OPERATOR_HEALTH_HOST'],
    default: '`8081` / `0.0.0.0`',
    meaning: 'where `/healthz`, `/readyz` and `/metrics` are served',
  },
  {
    names: ['BOXAUTH_LOG_LEVEL'],
    default: '`info`',
    meaning: '`trace` \u2026 `fatal`, `silent`',
  },
  {
    names: ['BOXAUTH_SHUTDOWN_TIMEOUT_MS'],
    default: '`10000`',
    meaning: 'on SIGTERM, how long reconciles in progress may take',
  },
];

/** `--help`'s list of `variables`: each with its default, and what it means, as plain text. */
export function variablesHelp(variables: ConfigVariable[]): string {
  const plain = (markdown: string): string => markdown.replaceAll('`', '');
  const wrap = (text: string): string => (text.match(/.{1,94}(\s|$)/g) ?? [text]).map((line) => `      ${line.trimEnd()}`).join('\n');
  return variables.map((v) => `  ${v.names.join(' / ')}  (default: ${plain(v.default)})\n${wrap(plain(v.meaning))}`).join('\n');
}
