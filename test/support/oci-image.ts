// An OCI image archive as a runtime reads it (scripts/image-build.sh writes them): its layout, the image of each
// platform (an index entry is one manifest, or an image index of one manifest per platform), every blob checked
// against its descriptor, and a platform's layers unpacked in order into a root filesystem.
import { expect } from 'chai';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { run } from './kube.js';

export const OCI_INDEX = 'application/vnd.oci.image.index.v1+json';
export const OCI_MANIFEST = 'application/vnd.oci.image.manifest.v1+json';

export interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
  annotations?: Record<string, string>;
  platform?: { architecture: string; os: string };
}
export interface ImageConfig {
  architecture: string;
  os: string;
  config: {
    User: string;
    Env: string[];
    Cmd: string[];
    WorkingDir: string;
    ExposedPorts: Record<string, object>;
    Labels: Record<string, string>;
  };
  rootfs: { type: string; diff_ids: string[] };
}
export interface Manifest {
  mediaType: string;
  config: Descriptor;
  layers: Descriptor[];
}
/** One platform's image: its descriptor (with the platform), manifest and configuration. */
export interface PlatformImage {
  descriptor: Descriptor;
  manifest: Manifest;
  config: ImageConfig;
}

export const sha256 = (bytes: Buffer): string => `sha256:${createHash('sha256').update(bytes).digest('hex')}`;

export class OciLayout {
  private constructor(
    readonly dir: string,
    readonly index: { schemaVersion: number; mediaType?: string; manifests: Descriptor[] },
  ) {}

  /** The archive unpacked into `dir`. */
  static async extract(archive: string, dir: string): Promise<OciLayout> {
    fs.mkdirSync(dir, { recursive: true });
    const untar = await run('tar', ['-xf', archive, '-C', dir]);
    expect(untar.code, untar.stderr).to.equal(0);
    return new OciLayout(dir, JSON.parse(fs.readFileSync(path.join(dir, 'index.json'), 'utf8')));
  }

  /** A blob of the layout, checked against its descriptor's digest and size. */
  blob(descriptor: Descriptor): Buffer {
    const bytes = fs.readFileSync(path.join(this.dir, 'blobs', ...descriptor.digest.split(':')));
    expect(sha256(bytes), descriptor.digest).to.equal(descriptor.digest);
    expect(bytes.length, descriptor.digest).to.equal(descriptor.size);
    return bytes;
  }

  json<T>(descriptor: Descriptor): T {
    return JSON.parse(this.blob(descriptor).toString('utf8')) as T;
  }

  /** The images an index entry names: its manifest, or each manifest of its image index. */
  images(entry: Descriptor = this.index.manifests[0]!): PlatformImage[] {
    const descriptors = entry.mediaType === OCI_INDEX ? this.json<{ manifests: Descriptor[] }>(entry).manifests : [entry];
    return descriptors.map((descriptor) => {
      const manifest = this.json<Manifest>(descriptor);
      return { descriptor, manifest, config: this.json<ImageConfig>(manifest.config) };
    });
  }

  /** The image of one architecture among those of the first entry. */
  image(architecture: string): PlatformImage {
    const found = this.images().find((image) => image.descriptor.platform?.architecture === architecture);
    expect(found, `a linux/${architecture} image`).to.not.equal(undefined);
    return found!;
  }

  /** The layers of `image` in order, as a runtime applies them (the image has no whiteouts: nothing is deleted). */
  async unpack(image: PlatformImage, rootfs: string): Promise<void> {
    fs.mkdirSync(rootfs, { recursive: true });
    for (const layer of image.manifest.layers) {
      const tar = path.join(this.dir, '..', `layer-${layer.digest.slice(7, 19)}.tar`);
      fs.writeFileSync(tar, zlib.gunzipSync(this.blob(layer)));
      const r = await run('tar', ['-xpf', tar, '-C', rootfs, '--numeric-owner']);
      fs.rmSync(tar);
      expect(r.code, r.stderr).to.equal(0);
    }
  }
}

/** The machine an ELF file is built for: its e_machine (62 x86-64, 183 AArch64; the ELF specification). */
export function elfMachine(file: string): string {
  const header = Buffer.alloc(20);
  const fd = fs.openSync(file, 'r');
  try {
    fs.readSync(fd, header, 0, 20, 0);
  } finally {
    fs.closeSync(fd);
  }
  expect(header.subarray(0, 4).toString('latin1'), file).to.equal('\x7fELF');
  const machine = header.readUInt16LE(18);
  return ({ 62: 'x86-64', 183: 'aarch64' } as Record<number, string>)[machine] ?? `e_machine ${machine}`;
}

/**
 * A command of the image run as its configuration runs it, under chroot: its user, working directory and
 * environment, and only that environment unless `inherit` (a Pod's, from the process that spawns it). A foreign
 * architecture's programs run under qemu-user, registered in binfmt_misc.
 */
export function inImageArgs(
  rootfs: string,
  config: ImageConfig,
  argv: string[],
  opts: { user?: string; inherit?: boolean } = {},
): string[] {
  const user = `--userspec=${opts.user ?? config.config.User}`;
  return [
    'chroot',
    user,
    rootfs,
    '/usr/bin/env',
    ...(opts.inherit ? [] : ['-i']),
    '-C',
    config.config.WorkingDir,
    ...config.config.Env,
    ...argv,
  ];
}
