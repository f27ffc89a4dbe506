/**
 * The repository's copy of the external test vectors must stay the published bytes: it is held here to the project's
 * shared set wherever that is laid out beside the checkout (CI does), file by file and byte for byte.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { sharedVectorsDir, vectorsDir } from '../support/paths.js';

function filesUnder(dir: string): string[] {
  return fs
    .readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.relative(dir, path.join(e.parentPath, e.name)))
    .sort();
}

describe('the external test vectors', () => {
  it('the copy in the repository holds every vector file, and each JSON one parses', () => {
    const files = filesUnder(vectorsDir);
    for (const name of [
      'jcs/numbers.txt',
      'ed25519/rfc8032.json',
      'ed25519/speccheck_cases.json',
      'README.md',
    ])
      expect(files).toContain(name);
    for (const name of files.filter((f) => f.endsWith('.json')))
      expect(() => JSON.parse(fs.readFileSync(path.join(vectorsDir, name), 'utf8'))).not.toThrow();
  });

  it.skipIf(!fs.existsSync(sharedVectorsDir))('the copy is the shared set, byte for byte', () => {
    const files = filesUnder(sharedVectorsDir);
    expect(filesUnder(vectorsDir)).toEqual(files);
    for (const name of files)
      expect(
        fs
          .readFileSync(path.join(vectorsDir, name))
          .equals(fs.readFileSync(path.join(sharedVectorsDir, name))),
        name,
      ).toBe(true);
  });
});
