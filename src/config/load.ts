// Reading cluster.toml from disk: the one I/O step before parseClusterConfig.
// A file that cannot be read is an error value like any other (line 0).

import { readFile } from 'node:fs/promises';
import { type ClusterConfigResult, parseClusterConfig } from './cluster.js';

export async function readClusterConfig(file: string): Promise<ClusterConfigResult> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const message = code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : `cannot be read (${String(error)})`;
    return {
      ok: false,
      errors: [{ file, line: 0, key: '', message, fix: 'pass the path of an existing cluster.toml with --config (docs/cluster.example.toml shows one)' }],
    };
  }
  return parseClusterConfig(text, file);
}
