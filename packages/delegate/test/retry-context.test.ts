import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { rememberRetryLocations, takeRetryLocations } from '../src/retry-context.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

function storeFile(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'delegate-git-retry-'));
  dirs.push(dir);
  return path.join(dir, 'state', 'retry-context.json');
}

describe('retry context store', () => {
  it('a pass with nothing pending writes nothing (control: a failure is remembered, then taken once)', async () => {
    const file = storeFile();
    await rememberRetryLocations(file, '/ws', []);
    expect(fs.existsSync(file)).toBe(false);

    await rememberRetryLocations(file, '/ws', ['src/a.ts:4:1']);
    expect(JSON.parse(fs.readFileSync(file, 'utf8'))).toEqual({ '/ws': ['src/a.ts:4:1'] });
    expect(await takeRetryLocations(file, '/ws')).toEqual(['src/a.ts:4:1']);
    expect(await takeRetryLocations(file, '/ws')).toEqual([]);
  });

  it('a pass clears what an earlier failure left for its workspace, and only that', async () => {
    const file = storeFile();
    await rememberRetryLocations(file, '/ws', ['src/a.ts:4:1']);
    await rememberRetryLocations(file, '/other', ['src/b.ts:9']);
    await rememberRetryLocations(file, '/ws', []);
    expect(JSON.parse(fs.readFileSync(file, 'utf8'))).toEqual({ '/other': ['src/b.ts:9'] });
  });
});
