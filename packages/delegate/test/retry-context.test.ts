import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { NO_OFFER, rememberRetryOffer, takeRetryOffer } from '../src/retry-context.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

function storeFile(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'delegate-git-retry-'));
  dirs.push(dir);
  return path.join(dir, 'state', 'retry-context.json');
}

const failed = { locations: ['src/a.ts:4:1'], failures: ['adds at src/a.ts:4:1 (ERR_ASSERTION)'] };

describe('retry context store', () => {
  it('a pass with nothing pending writes nothing (control: a failure is remembered, then taken once)', async () => {
    const file = storeFile();
    await rememberRetryOffer(file, '/ws', NO_OFFER);
    expect(fs.existsSync(file)).toBe(false);

    await rememberRetryOffer(file, '/ws', failed);
    expect(JSON.parse(fs.readFileSync(file, 'utf8'))).toEqual({ '/ws': failed });
    expect(await takeRetryOffer(file, '/ws')).toEqual(failed);
    expect(await takeRetryOffer(file, '/ws')).toEqual(NO_OFFER);
  });

  it('a pass clears what an earlier failure left for its workspace, and only that', async () => {
    const file = storeFile();
    const other = { locations: ['src/b.ts:9'], failures: [] };
    await rememberRetryOffer(file, '/ws', failed);
    await rememberRetryOffer(file, '/other', other);
    await rememberRetryOffer(file, '/ws', NO_OFFER);
    expect(JSON.parse(fs.readFileSync(file, 'utf8'))).toEqual({ '/other': other });
  });

  it('reads what an earlier version kept (locations alone), and nothing from an entry of another shape', async () => {
    const file = storeFile();
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, JSON.stringify({ '/ws': ['src/a.ts:4:1', 7], '/odd': 'text' }));
    expect(await takeRetryOffer(file, '/ws')).toEqual({ locations: ['src/a.ts:4:1'], failures: [] });
    expect(await takeRetryOffer(file, '/odd')).toEqual(NO_OFFER);
  });
});
