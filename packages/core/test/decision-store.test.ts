import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { makeTempDir, removeDir } from '../../../test/support/git-repo.js';
import { promotionsByBlob, readStore, STORE_VERSION, type Stored, storeText } from '../src/decision-store.js';

const dir = makeTempDir();
afterAll(() => removeDir(dir));

function roundTrip(stored: Stored, name: string): Stored | null {
  const file = path.join(dir, name);
  fs.writeFileSync(file, storeText(stored));
  return readStore(file);
}

describe('the decisions file', () => {
  const sha = 'a'.repeat(64);
  const blob = 'b'.repeat(40);

  it('reads back what it wrote, in order, whatever the paths and texts hold (a NUL in a text included)', () => {
    const stored: Stored = {
      texts: ['a unit passed it', '["alice"]', 'odd \0 reason\twith\nbreaks'],
      entries: new Map([
        [`${blob}\0src/a b\tc\nd.ts`, { sha256: sha, promoted: true, reason: 0, by: 1 }],
        [`${blob}\0src/z.ts`, { sha256: sha, promoted: false, reason: 2, by: 1 }],
      ]),
    };
    expect(roundTrip(stored, 'ok')).toEqual(stored);
  });

  it('is refused when cut short, from another version, or pointing past its texts (control above)', () => {
    const good = storeText({
      texts: ['r', '[]'],
      entries: new Map([[`${blob}\0src/a.ts`, { sha256: sha, promoted: true, reason: 0, by: 1 }]]),
    });
    const write = (name: string, text: string) => {
      fs.writeFileSync(path.join(dir, name), text);
      return readStore(path.join(dir, name));
    };
    expect(write('good', good)).not.toBeNull();
    expect(write('short', good.slice(0, -3))).toBeNull();
    expect(good.startsWith(`delegate-git decisions ${STORE_VERSION}\0`)).toBe(true);
    expect(write('version', good.replace(`decisions ${STORE_VERSION}`, 'decisions 3'))).toBeNull();
    expect(write('index', good.replace('\x000\x001\x00', '\x000\x007\x00'))).toBeNull();
    expect(write('json', '{"version":2,"texts":[],"entries":{}}')).toBeNull();
  });

  it('lists the promotions alone by blob, for the quick path (a refusal is not one)', () => {
    const other = 'c'.repeat(40);
    const file = path.join(dir, 'promotions');
    fs.writeFileSync(
      file,
      storeText({
        texts: ['r', '[]'],
        entries: new Map([
          [`${blob}\0src/a.ts`, { sha256: sha, promoted: true, reason: 0, by: 1 }],
          [`${blob}\0src/copy-of-a.ts`, { sha256: sha, promoted: true, reason: 0, by: 1 }],
          [`${other}\0src/b.ts`, { sha256: sha, promoted: false, reason: 0, by: 1 }],
        ]),
      }),
    );
    expect(promotionsByBlob(file)).toEqual(new Map([[blob, ['src/a.ts', 'src/copy-of-a.ts']]]));
    fs.writeFileSync(file, '{"version":2}');
    expect(promotionsByBlob(file)).toBeNull();
  });
});
