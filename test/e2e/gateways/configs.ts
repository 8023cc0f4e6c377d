// The gateway configurations the tests run, as docs/guides/guard-your-apps.md
// gives them (there cut down to one app, with names for addresses): each
// gateway asks the box's forward-auth door about every request to the app, sets
// the identity headers of the box's answer on the request it passes on, and routes
// the app's /.boxauth/* (the way back from sign-in) and its metadata document
// (/.well-known/oauth-protected-resource, RFC 9728) to the box with the app's Host.
// NGINX in front of an MCP server is read from docs/guides/mcp-servers.md itself
// (mcpNginxConf).

import fs from 'node:fs';
import path from 'node:path';
import { projectPath } from '../../../api/paths.js';

/** Where one gateway listens, and what is behind it. */
export interface Wiring {
  /** The App it guards (its id: the gateway names it in the forward-auth address). */
  app: string;
  /** The gateway's own port on 127.0.0.1: the app's url is http://127.0.0.1:<port>. */
  port: number;
  /** host:port of the box and of the app's upstream. */
  box: string;
  upstream: string;
  /** A directory of the gateway's own, for its temporary files. */
  dir: string;
}

/** The identity headers of the box's answer (docs/guides/guard-your-apps.md: their default names). */
export const IDENTITY_HEADERS = ['X-Auth-Request-User', 'X-Auth-Request-Email', 'X-Auth-Request-Groups', 'X-Auth-Request-Client'];

const variable = (header: string): string => `$boxauth_${header.replace(/^X-Auth-Request-/, '').toLowerCase()}`;
const upstreamVariable = (header: string): string => `$upstream_http_${header.toLowerCase().replace(/-/g, '_')}`;

/**
 * NGINX with auth_request. The subrequest asks with `?signin=401`: auth_request
 * passes on only 2xx, 401 and 403, so a person's redirect to sign in comes back as
 * 401 with the address in X-Boxauth-Sign-In, which @boxauth_401 turns into the
 * redirect. Host is `$http_host`, not `$host`: `$host` drops the port, and the box
 * finds the app of /.boxauth/* by its Host as the app's url names it.
 */
export function nginxConf(w: Wiring): string {
  return nginxAround(
    w.dir,
    `
  upstream boxauth { server ${w.box}; }
  upstream app { server ${w.upstream}; }

  server {
    listen 127.0.0.1:${w.port};

    location / {
      auth_request /.boxauth-authz;
${IDENTITY_HEADERS.map((h) => `      auth_request_set ${variable(h)} ${upstreamVariable(h)};\n      proxy_set_header ${h} ${variable(h)};`).join('\n')}
      auth_request_set $boxauth_sign_in $upstream_http_x_boxauth_sign_in;
      auth_request_set $boxauth_challenge $upstream_http_www_authenticate;
      error_page 401 = @boxauth_401;
      error_page 403 = @boxauth_403;
      proxy_pass http://app;
    }

    location = /.boxauth-authz {
      internal;
      proxy_pass http://boxauth/authz/forward-auth/${w.app}?signin=401;
      proxy_pass_request_body off;
      proxy_set_header Content-Length "";
      proxy_set_header X-Original-URI $request_uri;
      proxy_set_header X-Original-Method $request_method;
      proxy_set_header Host $http_host;
      proxy_connect_timeout 2s;
      proxy_read_timeout 5s;
    }

    # 401 from the box: a person is sent to sign in; anything else gets the 401, with the
    # WWW-Authenticate of the box's answer (auth_request passes it on).
    location @boxauth_401 {
      if ($boxauth_sign_in) {
        return 302 $boxauth_sign_in;
      }
      return 401;
    }

    # 403 from the box: auth_request passes WWW-Authenticate on with a 401 only, so the
    # insufficient_scope challenge of a token short of a policy's scope is set here.
    location @boxauth_403 {
      add_header WWW-Authenticate $boxauth_challenge always;
      return 403;
    }

    location /.boxauth/ {
      proxy_pass http://boxauth;
      proxy_set_header Host $http_host;
    }

    location /.well-known/oauth-protected-resource {
      proxy_pass http://boxauth;
      proxy_set_header Host $http_host;
    }
  }
`,
  );
}

/**
 * What an nginx of the tests runs `http` in: in the foreground, its pid and temporary files in
 * its own directory `dir`, errors to stderr, `modules` (file names in Debian's modules path)
 * loaded first.
 */
export function nginxAround(dir: string, http: string, modules: string[] = []): string {
  return `
daemon off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log stderr warn;
${modules.map((m) => `load_module ${NGINX_MODULES}/${m};\n`).join('')}events { worker_connections 256; }
http {
  access_log off;
  client_body_temp_path ${dir}/client_body;
  proxy_temp_path ${dir}/proxy;
  fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi;
  scgi_temp_path ${dir}/scgi;
${http}}
`;
}

/**
 * Caddy with forward_auth. The identity headers are removed first (a `route`
 * keeps this order): which Caddy versions overwrite, skip or delete a copy_headers
 * header the box answers empty or not at all has changed over releases, and a
 * skipped one would let the client's own value through. Then every header with
 * `_` or `.` in its name: CGI, PHP, WSGI and Rack read X_Auth_Request_User and
 * X.Auth.Request.User as X-Auth-Request-User, and Caddy passes them on.
 */
export function caddyfile(w: Wiring): string {
  return `
{
  admin off
  auto_https off
  grace_period 1s
}

http://127.0.0.1:${w.port} {
  handle /.boxauth/* {
    reverse_proxy ${w.box}
  }
  handle /.well-known/oauth-protected-resource* {
    reverse_proxy ${w.box}
  }
  handle {
    route {
${IDENTITY_HEADERS.map((h) => `      request_header -${h}`).join('\n')}
      request_header -*_*
      request_header -*.*
      forward_auth ${w.box} {
        uri /authz/forward-auth/${w.app}
        copy_headers ${IDENTITY_HEADERS.join(' ')}
      }
      reverse_proxy ${w.upstream}
    }
  }
}
`;
}

/** The path prefix of Traefik's second router, whose forwardAuth sends only the headers docs/operations/traces.md lists. */
export const TRAEFIK_LISTED_PREFIX = '/listed/';

/** The `authRequestHeaders` list of docs/operations/traces.md, which keeps the app's trace context. */
function tracesPageRequestHeaders(): string {
  const page = fs.readFileSync(projectPath('docs', 'operations', 'traces.md'), 'utf8');
  const list = /authRequestHeaders: (\[[^\]\n]+\])/.exec(page)?.[1];
  if (!list) throw new Error('docs/operations/traces.md has no authRequestHeaders list');
  return list;
}

/**
 * Traefik's dynamic configuration (the file provider): forwardAuth on the app's router, /.boxauth/ and the metadata to
 * the box; and under TRAEFIK_LISTED_PREFIX the same forwardAuth with the `authRequestHeaders` list of the traces page.
 */
export function traefikDynamic(w: Wiring): string {
  return `
http:
  routers:
    ${w.app}:
      rule: PathPrefix(\`/\`)
      entryPoints: [web]
      middlewares: [boxauth-${w.app}]
      service: ${w.app}
    ${w.app}-listed:
      rule: PathPrefix(\`${TRAEFIK_LISTED_PREFIX}\`)
      entryPoints: [web]
      middlewares: [boxauth-${w.app}-listed]
      service: ${w.app}
    ${w.app}-boxauth:
      rule: PathPrefix(\`/.boxauth/\`)
      entryPoints: [web]
      service: boxauth
    ${w.app}-metadata:
      rule: PathPrefix(\`/.well-known/oauth-protected-resource\`)
      entryPoints: [web]
      service: boxauth
  middlewares:
    boxauth-${w.app}:
      forwardAuth:
        address: http://${w.box}/authz/forward-auth/${w.app}
        trustForwardHeader: false
        authResponseHeaders:
${IDENTITY_HEADERS.map((h) => `          - ${h}`).join('\n')}
    boxauth-${w.app}-listed:
      forwardAuth:
        address: http://${w.box}/authz/forward-auth/${w.app}
        trustForwardHeader: false
        authRequestHeaders: ${tracesPageRequestHeaders()}
        authResponseHeaders:
${IDENTITY_HEADERS.map((h) => `          - ${h}`).join('\n')}
  services:
    ${w.app}:
      loadBalancer:
        servers:
          - url: http://${w.upstream}
    boxauth:
      loadBalancer:
        servers:
          - url: http://${w.box}
`;
}

/** Traefik's static configuration, as command-line flags. */
export function traefikFlags(w: Wiring, dynamicFile: string): string[] {
  return [
    `--entryPoints.web.address=127.0.0.1:${w.port}`,
    '--entryPoints.web.transport.lifeCycle.graceTimeOut=1s',
    `--providers.file.filename=${dynamicFile}`,
    '--log.level=ERROR',
    '--global.checkNewVersion=false',
    '--global.sendAnonymousUsage=false',
  ];
}

/** Where Debian's nginx keeps its dynamic modules (`nginx -V`: --modules-path). */
const NGINX_MODULES = '/usr/lib/nginx/modules';

/** The guide's names of the box and of the MCP server, and its listener, as docs/guides/mcp-servers.md writes them. */
const MCP_GUIDE_NAMES = {
  box: 'auth.internal:8080',
  upstream: 'mcp-backend:3000',
  listen: 'listen 443 ssl;',
  serverName: /^ *server_name mcp\.example\.com;\n/m,
  certificate: /^ *# ssl_certificate …\n/m,
};

/**
 * NGINX in front of an MCP server as docs/guides/mcp-servers.md gives it: the page's `nginx`
 * block, as pasted, with the test's addresses for the guide's names and its loopback listener
 * for the TLS one; around it, what a server block needs to run alone.
 */
export function mcpNginxConf(guide: string, w: Omit<Wiring, 'app'>): string {
  const block = /```nginx\n([\s\S]*?)```/.exec(guide)?.[1];
  if (!block) throw new Error('docs/guides/mcp-servers.md has no nginx block');
  const replace = (text: string, name: string | RegExp, by: string): string => {
    if (!(typeof name === 'string' ? text.includes(name) : name.test(text)))
      throw new Error(`the guide's nginx block has no ${String(name)}`);
    return text.replace(name, by);
  };
  let server = replace(block, MCP_GUIDE_NAMES.box, w.box);
  server = replace(server, MCP_GUIDE_NAMES.upstream, w.upstream);
  server = replace(server, MCP_GUIDE_NAMES.listen, `listen 127.0.0.1:${w.port};`);
  server = replace(server, MCP_GUIDE_NAMES.serverName, '');
  server = replace(server, MCP_GUIDE_NAMES.certificate, '');
  // The Lua module and the NDK it needs, as Debian's modules-enabled files load them.
  const modules = ['ndk_http_module.so', 'ngx_http_lua_module.so'];
  for (const m of modules) {
    const file = path.join(NGINX_MODULES, m);
    if (!fs.existsSync(file)) throw new Error(`${file} not found: install Debian's libnginx-mod-http-lua (make test-e2e does)`);
  }
  return nginxAround(w.dir, `\n${server}`, modules);
}
