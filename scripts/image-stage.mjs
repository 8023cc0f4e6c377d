// The steps of scripts/image-build.sh that write JSON: the image's configuration, manifest and index, and its SBOM.
//
//   node scripts/image-stage.mjs layout <layout dir> <spec.json>
//     writes an OCI image layout (https://github.com/opencontainers/image-spec/blob/main/image-layout.md) of one
//     image per architecture the spec names, each of the gzipped layer tars it names, with the configuration of the
//     Dockerfile's final stage (USER, ENV, WORKDIR, EXPOSE, CMD, ENTRYPOINT, LABEL: the one place these are
//     written), and one index entry per image name: the manifest of the one architecture, or an image index of one
//     manifest per platform (image-spec image-index.md) when there are several; prints that entry's digest.
//     spec.json: { dockerfile, created, names, labels, images: [{ architecture, dpkgStatus, osRelease, layers:
//     [{ file, diffId, createdBy }] }] }.
//   node scripts/image-stage.mjs sbom <npm sbom.json> <spec.json> <layout dir>
//     prints a CycloneDX SBOM of the image the layout holds: the npm packages of npm sbom (the release's tool) and
//     the Debian packages that each architecture's dpkg status lists as installed.
//   node scripts/image-stage.mjs config <Dockerfile>
//     prints the configuration read from the Dockerfile's final stage (what `layout` writes into the image).
import { Buffer } from 'node:buffer';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import process from 'node:process';
import { createLayout, OCI_INDEX, OCI_MANIFEST, writeBlob, writeIndex } from './oci.mjs';

const readJson = (file) => JSON.parse(fs.readFileSync(file, 'utf8'));

// image-spec config.md and layer.md.
const OCI_CONFIG = 'application/vnd.oci.image.config.v1+json';
const OCI_LAYER_GZIP = 'application/vnd.oci.image.layer.v1.tar+gzip';
// What `docker build` starts from (the debian images' ENV PATH); the runtime's default when an image sets none.
const DEFAULT_PATH = 'PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** key=value words of ENV and LABEL, with "…" quoting as the Dockerfile writes them. */
function pairs(text) {
  const out = {};
  for (const [, key, quoted, bare] of text.matchAll(/([^\s=]+)=(?:"((?:[^"\\]|\\.)*)"|(\S*))/g))
    out[key] = quoted === undefined ? bare : quoted.replace(/\\(.)/g, '$1');
  return out;
}

/**
 * The container configuration the Dockerfile's last stage declares (its RUN and COPY lines are what
 * image-build.sh does by other means). Fails on what it cannot read rather than leave a setting out.
 */
export function finalStageConfig(dockerfile) {
  const lines = fs
    .readFileSync(dockerfile, 'utf8')
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith('#'));
  const from = lines.findLastIndex((line) => /^FROM\s/i.test(line));
  if (from < 0) throw new Error(`${dockerfile}: no FROM`);
  const config = { Env: [DEFAULT_PATH], Labels: {} };
  for (const line of lines.slice(from + 1)) {
    const [, instruction, rest] = /^(\S+)\s+(.*)$/.exec(line) ?? [];
    switch (instruction?.toUpperCase()) {
      case 'ENV':
        for (const [key, value] of Object.entries(pairs(rest))) config.Env.push(`${key}=${value}`);
        break;
      case 'LABEL':
        Object.assign(config.Labels, pairs(rest));
        break;
      case 'USER':
        config.User = rest;
        break;
      case 'WORKDIR':
        config.WorkingDir = rest;
        break;
      case 'EXPOSE':
        config.ExposedPorts = Object.fromEntries(rest.split(/\s+/).map((port) => [port.includes('/') ? port : `${port}/tcp`, {}]));
        break;
      case 'CMD':
      case 'ENTRYPOINT': {
        const argv = JSON.parse(rest); // the exec form only: the image has no shell to run a string with
        if (!Array.isArray(argv)) throw new Error(`${dockerfile}: ${line}: not the exec form`);
        config[instruction.toUpperCase() === 'CMD' ? 'Cmd' : 'Entrypoint'] = argv;
        break;
      }
    }
  }
  for (const key of ['User', 'WorkingDir', 'Cmd']) if (!config[key]) throw new Error(`${dockerfile}: the final stage sets no ${key}`);
  return config;
}

/** The config and manifest of one architecture's image; returns the manifest's descriptor, with its platform. */
function writeImage(layout, spec, image) {
  const layers = image.layers.map(({ file }) => ({ mediaType: OCI_LAYER_GZIP, ...writeBlob(layout, fs.readFileSync(file)) }));
  const fromDockerfile = finalStageConfig(spec.dockerfile);
  const platform = { architecture: image.architecture, os: 'linux' };
  const imageConfig = {
    created: spec.created,
    ...platform,
    config: { ...fromDockerfile, Labels: { ...fromDockerfile.Labels, ...spec.labels } },
    rootfs: { type: 'layers', diff_ids: image.layers.map((layer) => layer.diffId) },
    history: image.layers.map((layer) => ({ created: spec.created, created_by: layer.createdBy })),
  };
  const config = { mediaType: OCI_CONFIG, ...writeBlob(layout, Buffer.from(JSON.stringify(imageConfig))) };
  const manifest = { schemaVersion: 2, mediaType: OCI_MANIFEST, config, layers, annotations: spec.labels };
  return { mediaType: OCI_MANIFEST, ...writeBlob(layout, Buffer.from(JSON.stringify(manifest))), platform };
}

/**
 * The images' configs and manifests, and the index (one entry per name, as `ctr images import` names images):
 * each name's entry is the manifest of the one architecture or, with several, an image index of them all. The
 * names are not put on the manifests of a multi-architecture image: containerd would name an image after each,
 * the last one imported winning, whatever its platform.
 */
function writeImageLayout(layout, specFile) {
  const spec = readJson(specFile);
  createLayout(layout);
  const manifests = spec.images.map((image) => writeImage(layout, spec, image));
  const [only] = manifests;
  const target =
    manifests.length === 1
      ? only
      : {
          mediaType: OCI_INDEX,
          ...writeBlob(
            layout,
            Buffer.from(JSON.stringify({ schemaVersion: 2, mediaType: OCI_INDEX, manifests, annotations: spec.labels })),
          ),
        };
  writeIndex(
    layout,
    spec.names.map((name) => ({
      ...target,
      annotations: {
        // containerd names an imported image by io.containerd.image.name, as it is written; ref.name is the
        // tag (image-layout.md). The kubelet asks containerd for a Pod's image by its full name (boxauth:dev is
        // docker.io/library/boxauth:dev), so that is the name it gets.
        'io.containerd.image.name': fullName(name),
        'org.opencontainers.image.ref.name': name.slice(name.lastIndexOf(':') + 1),
      },
    })),
  );
  process.stdout.write(`${target.digest}\n`);
}

/** The stanzas of a dpkg status file (deb822), the installed ones only. */
function installedDebs(statusFile) {
  return fs
    .readFileSync(statusFile, 'utf8')
    .split(/\n\n+/)
    .map((stanza) => Object.fromEntries([...stanza.matchAll(/^([A-Za-z0-9-]+):[ \t]*(.*)$/gm)].map(([, key, value]) => [key, value])))
    .filter((fields) => fields.Package && /\binstalled$/.test(fields.Status ?? ''))
    .sort((a, b) => a.Package.localeCompare(b.Package));
}

/**
 * The image as CycloneDX 1.5 (https://cyclonedx.org/docs/1.5/json/): npm's components and Debian's. The image is
 * the layout's index entry (a multi-architecture image's index); with several architectures each platform's
 * manifest is a container component of its own, and a Debian package is one per architecture (`name:arch`, as
 * dpkg names it; an `all` package once).
 */
function imageSbom(npmBomFile, specFile, layout) {
  const npm = readJson(npmBomFile);
  const spec = readJson(specFile);
  const [entry] = readJson(path.join(layout, 'index.json')).manifests;
  const platforms = entry.mediaType === OCI_INDEX ? readJson(path.join(layout, 'blobs', ...entry.digest.split(':'))).manifests : [];
  const osRelease = Object.fromEntries(
    [...fs.readFileSync(spec.images[0].osRelease, 'utf8').matchAll(/^(\w+)="?([^"\n]*)"?$/gm)].map(([, key, value]) => [key, value]),
  );
  const distro = `${osRelease.ID}-${osRelease.VERSION_ID}`;
  // The package URL of a Debian package (purl-spec, types: deb): version and qualifiers percent-encoded.
  const debs = new Map();
  for (const image of spec.images)
    for (const deb of installedDebs(image.dpkgStatus)) {
      const source = deb.Source?.split(' ')[0];
      const ref = `deb:${deb.Package}:${deb.Architecture}@${deb.Version}`;
      debs.set(ref, {
        type: 'library',
        'bom-ref': ref,
        name: deb.Package,
        version: deb.Version,
        purl: `pkg:deb/${osRelease.ID}/${deb.Package}@${encodeURIComponent(deb.Version)}?arch=${deb.Architecture}&distro=${distro}`,
        ...(source && source !== deb.Package ? { properties: [{ name: 'debian:source', value: source }] } : {}),
      });
    }
  const [repository] = spec.names[0].split(/:(?=[^:/]+$)/);
  const version = spec.labels['org.opencontainers.image.version'];
  const container = (digest, properties) => ({
    type: 'container',
    'bom-ref': `image:${repository}@${digest}`,
    name: repository,
    version,
    hashes: [{ alg: 'SHA-256', content: digest.replace(/^sha256:/, '') }],
    purl: `pkg:oci/${path.basename(repository)}@${encodeURIComponent(digest)}?repository_url=${encodeURIComponent(repository)}`,
    ...(properties ? { properties } : {}),
  });
  const image = container(entry.digest);
  const perPlatform = platforms.map((m) =>
    container(m.digest, [{ name: 'oci:platform', value: `${m.platform.os}/${m.platform.architecture}` }]),
  );
  const os = {
    type: 'operating-system',
    'bom-ref': `os:${distro}`,
    name: osRelease.ID,
    version: osRelease.VERSION_ID,
    description: osRelease.PRETTY_NAME,
  };
  const app = npm.metadata.component;
  const contents = [os['bom-ref'], app['bom-ref']];
  return {
    bomFormat: 'CycloneDX',
    specVersion: npm.specVersion,
    // Stable for one image: its digest names it.
    serialNumber: `urn:uuid:${uuidOf(entry.digest)}`,
    version: 1,
    metadata: { timestamp: spec.created, tools: npm.metadata.tools, component: image },
    components: [...perPlatform, os, app, ...debs.values(), ...npm.components],
    dependencies: [
      { ref: image['bom-ref'], dependsOn: perPlatform.length ? perPlatform.map((p) => p['bom-ref']) : contents },
      ...perPlatform.map((p) => ({ ref: p['bom-ref'], dependsOn: contents })),
      { ref: os['bom-ref'], dependsOn: [...debs.keys()] },
      ...(npm.dependencies ?? []),
    ],
  };
}

/** A UUID (version 4 layout) made from a digest, so the same image gets the same serial number. */
function uuidOf(digest) {
  const hex = createHash('sha256').update(digest).digest('hex').slice(0, 32).split('');
  hex[12] = '4';
  hex[16] = ((parseInt(hex[16], 16) & 0x3) | 0x8).toString(16);
  const s = hex.join('');
  return `${s.slice(0, 8)}-${s.slice(8, 12)}-${s.slice(12, 16)}-${s.slice(16, 20)}-${s.slice(20)}`;
}

const [step, ...args] = process.argv.slice(2);
if (step === 'layout' && args.length === 2) writeImageLayout(args[0], args[1]);
else if (step === 'sbom' && args.length === 3) process.stdout.write(`${JSON.stringify(imageSbom(...args), null, 2)}\n`);
else if (step === 'config' && args.length === 1) process.stdout.write(`${JSON.stringify(finalStageConfig(args[0]), null, 2)}\n`);
else {
  process.stderr.write(
    'usage: image-stage.mjs layout <layout dir> <spec.json> | sbom <npm sbom> <spec.json> <layout dir> | config <Dockerfile>\n',
  );
  process.exit(2);
}

/**
 * A Docker reference's full name, as containerd's CRI resolves it (distribution/reference's ParseNormalizedNamed):
 * a first part that is not a host (no `.` or `:`, not localhost) means Docker Hub, and a single part its library.
 */
export function fullName(name) {
  const slash = name.indexOf('/');
  const first = slash < 0 ? '' : name.slice(0, slash);
  if (first && (first.includes('.') || first.includes(':') || first === 'localhost')) return name;
  return slash < 0 ? `docker.io/library/${name}` : `docker.io/${name}`;
}
