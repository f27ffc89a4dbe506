import path from 'node:path';
import { build } from 'esbuild';
import { repoRoot } from './paths.js';

/**
 * One source module of this checkout bundled as an ES module a plain `node` process can import: for tests that need
 * the code in a process of its own (concurrent writers, a process to interrupt). `entry` is relative to the root.
 */
export async function bundleModule(entry: string, outfile: string): Promise<string> {
  await build({
    entryPoints: [path.join(repoRoot, entry)],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    logLevel: 'warning',
  });
  return outfile;
}
