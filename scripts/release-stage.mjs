// The steps of scripts/release.sh that rewrite files or write JSON: each works on a staging copy,
// never on a tracked file.
//
//   node scripts/release-stage.mjs package <stage> <version>
//     stamps the version into the staged package.json and npm-shrinkwrap.json (a copy of the
//     lock file, so `npm install -g` of the tarball installs the dependencies the SBOM lists),
//     and keeps of the scripts only what a user of the package runs;
//   node scripts/release-stage.mjs sbom-input <stage> <dir>
//     writes into <dir> the staged package.json and lock file without what only development uses, for
//     npm sbom: `npm sbom --omit dev` (npm 11.19) leaves out every package that a development dependency
//     also depends on (jose, ajv, yaml…), though the package needs them;
//   node scripts/release-stage.mjs chart <chart dir> <image repository> <version>
//     sets the image of the staged chart's values to <image repository>:<version>;
//   node scripts/release-stage.mjs oci-layout <chart .tgz> <layout dir>
//     writes the packaged chart as an OCI image layout, with the media types Helm pushes.
import { Buffer } from 'node:buffer';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import process from 'node:process';
import { parse } from 'yaml';
import { createLayout, OCI_MANIFEST, writeBlob, writeIndex, writeJson } from './oci.mjs';

const readJson = (file) => JSON.parse(fs.readFileSync(file, 'utf8'));

function stagePackage(stage, version) {
  const manifest = readJson(path.join(stage, 'package.json'));
  manifest.version = version;
  // prepare and build compile a checkout; the package ships compiled code.
  manifest.scripts = { start: manifest.scripts.start };
  writeJson(path.join(stage, 'package.json'), manifest);
  const lock = readJson(path.join(stage, 'package-lock.json'));
  lock.version = version;
  lock.packages[''].version = version;
  writeJson(path.join(stage, 'npm-shrinkwrap.json'), lock);
  fs.rmSync(path.join(stage, 'package-lock.json'));
}

function sbomInput(stage, dir) {
  const manifest = readJson(path.join(stage, 'package.json'));
  delete manifest.devDependencies;
  const lock = readJson(path.join(stage, 'npm-shrinkwrap.json'));
  delete lock.packages[''].devDependencies;
  for (const [where, entry] of Object.entries(lock.packages)) if (entry.dev) delete lock.packages[where];
  fs.mkdirSync(dir, { recursive: true });
  writeJson(path.join(dir, 'package.json'), manifest);
  writeJson(path.join(dir, 'package-lock.json'), lock);
}

/**
 * The chart's image, set in values.yaml line by line (Chart.yaml's versions are set by helm package), so
 * the packaged values keep every comment and alignment of the tracked file.
 */
function stageChart(chartDir, imageRepository, version) {
  const file = path.join(chartDir, 'values.yaml');
  const text = fs.readFileSync(file, 'utf8');
  const block = /^image:\n(?: .*\n|\n)*/m.exec(text);
  if (!block) throw new Error(`${file}: no top-level image: block`);
  const stamped = block[0]
    .replace(/^( {2}repository: )\S+/m, (_, key) => key + imageRepository)
    .replace(/^( {2}tag: )\S+/m, (_, key) => key + version);
  const values = parse(text.replace(block[0], stamped));
  if (values.image.repository !== imageRepository || String(values.image.tag) !== version)
    throw new Error(`${file}: image.repository and image.tag not found in the image: block`);
  fs.writeFileSync(file, text.replace(block[0], stamped));
}

// Helm's media types (helm.sh/helm/v3/pkg/registry/constants.go): ConfigMediaType and ChartLayerMediaType.
const HELM_CONFIG = 'application/vnd.cncf.helm.config.v1+json';
const HELM_CHART = 'application/vnd.cncf.helm.chart.content.v1.tar+gzip';

function writeOciLayout(chartTgz, layout) {
  // The packaged Chart.yaml: helm package wrote the version into it.
  const meta = parse(execFileSync('tar', ['-xzOf', chartTgz, 'boxauth/Chart.yaml'], { encoding: 'utf8' }));
  createLayout(layout);
  // Helm's config blob is the chart's metadata (Chart.yaml) as JSON.
  const config = { mediaType: HELM_CONFIG, ...writeBlob(layout, Buffer.from(JSON.stringify(meta))) };
  const chart = {
    mediaType: HELM_CHART,
    ...writeBlob(layout, fs.readFileSync(chartTgz)),
    annotations: { 'org.opencontainers.image.title': path.basename(chartTgz) },
  };
  // The annotations `helm push` writes (pkg/registry/client.go, generateOCIAnnotations), but the creation time.
  const annotations = {
    'org.opencontainers.image.title': meta.name,
    'org.opencontainers.image.version': meta.version,
    'org.opencontainers.image.description': meta.description.trim(),
    ...(meta.home ? { 'org.opencontainers.image.url': meta.home } : {}),
    ...(meta.sources?.[0] ? { 'org.opencontainers.image.source': meta.sources[0] } : {}),
  };
  const manifest = { schemaVersion: 2, mediaType: OCI_MANIFEST, config, layers: [chart], annotations };
  const manifestBlob = writeBlob(layout, Buffer.from(JSON.stringify(manifest)));
  // The tag `oras cp --from-oci-layout <layout>:<version>` and `helm pull --version` name.
  writeIndex(layout, [{ mediaType: OCI_MANIFEST, ...manifestBlob, annotations: { 'org.opencontainers.image.ref.name': meta.version } }]);
}

const [step, ...args] = process.argv.slice(2);
if (step === 'package' && args.length === 2) stagePackage(args[0], args[1]);
else if (step === 'sbom-input' && args.length === 2) sbomInput(args[0], args[1]);
else if (step === 'chart' && args.length === 3) stageChart(args[0], args[1], args[2]);
else if (step === 'oci-layout' && args.length === 2) writeOciLayout(args[0], args[1]);
else {
  process.stderr.write(
    'usage: release-stage.mjs package <stage> <version> | sbom-input <stage> <dir> | chart <dir> <image> <version> | oci-layout <tgz> <layout>\n',
  );
  process.exit(2);
}
