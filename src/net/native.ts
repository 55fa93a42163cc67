// The native addon (native/peercred.c, built by node-gyp at `npm install`):
// what Node has no API for. Loaded on first use, so commands that never
// verify a peer do not pay for it (the CLI loads it when it connects to a
// socket it found by itself, to ask who listens there: about 1.5 ms).

import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface PasswdEntry {
  readonly name: string;
  readonly uid: number;
  readonly gid: number;
  readonly home: string;
  readonly shell: string;
}

export interface NativeAddon {
  /** The kernel's credentials of the process at the other end of a connected Unix socket (SO_PEERCRED). */
  peerCred(fd: number): { uid: number; gid: number; pid: number };
  /** getpwuid_r: NSS users too; null when there is none. */
  userById(uid: number): PasswdEntry | null;
  userByName(name: string): PasswdEntry | null;
  /** getgrouplist: the primary group and every supplementary group of a user. */
  groupsOf(name: string, gid: number): number[];
  groupByName(name: string): number | null;
}

let loaded: NativeAddon | undefined;

/** This module's file: dist/src/net/native.js, or in the CLI's bundle the bundle's (scripts/bundle-cli.mjs makes it __filename there). */
const moduleFile = (): string => fileURLToPath(import.meta.url);

/** The folder with package.json above this module (dist/src/net in the build, the bundle's folder for the CLI). */
function packageRoot(): string {
  let dir = dirname(moduleFile());
  for (;;) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'binding.gyp'))) return dir;
    const up = dirname(dir);
    if (up === dir) throw new Error('cannot find the taras package folder (binding.gyp) above ' + moduleFile());
    dir = up;
  }
}

/** The addon, loaded once; throws with the fix when it was not built. */
export function nativeAddon(): NativeAddon {
  if (loaded === undefined) {
    const root = packageRoot();
    const file = join(root, 'build', 'Release', 'taras_native.node');
    if (!existsSync(file)) throw new Error(`the native addon ${file} is missing: run \`npm install\` (or \`npm run install\`) in ${root} to build it with node-gyp`);
    loaded = createRequire(moduleFile())(file) as NativeAddon;
  }
  return loaded;
}
