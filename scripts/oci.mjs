// OCI image layouts (https://github.com/opencontainers/image-spec/blob/main/image-layout.md), written by
// scripts/release-stage.mjs (the chart) and scripts/image-stage.mjs (the container image).
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

export const OCI_MANIFEST = 'application/vnd.oci.image.manifest.v1+json';
export const OCI_INDEX = 'application/vnd.oci.image.index.v1+json';

export const writeJson = (file, value) => fs.writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`);

/** A fresh, empty layout at `layout`: "The blobs directory contains content-addressable blobs". */
export function createLayout(layout) {
  fs.rmSync(layout, { recursive: true, force: true });
  fs.mkdirSync(path.join(layout, 'blobs', 'sha256'), { recursive: true });
  writeJson(path.join(layout, 'oci-layout'), { imageLayoutVersion: '1.0.0' });
}

/** Stores `bytes` under their digest; returns the descriptor's digest and size. */
export function writeBlob(layout, bytes) {
  const hex = createHash('sha256').update(bytes).digest('hex');
  fs.writeFileSync(path.join(layout, 'blobs', 'sha256', hex), bytes);
  return { digest: `sha256:${hex}`, size: bytes.length };
}

/** "index.json ... entry point for references and descriptors": the manifests, each with its annotations. */
export function writeIndex(layout, manifests) {
  writeJson(path.join(layout, 'index.json'), { schemaVersion: 2, mediaType: OCI_INDEX, manifests });
}
