import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { makeTempDir, removeDir } from '../../../test/support/git-repo.js';
import {
  promotedText,
  readPromotions,
  readStore,
  STORE_VERSION,
  type Stored,
  storeText,
} from '../src/decision-store.js';

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

  it('lists the promotions alone, for the quick path: asked in any order, a refusal is not one', () => {
    const other = 'c'.repeat(40);
    const older = '0'.repeat(40);
    const file = path.join(dir, 'promotions');
    const promoted = (p: string) => ({ sha256: sha, promoted: p === 'yes', reason: 0, by: 1 });
    fs.writeFileSync(
      file,
      promotedText({
        texts: ['r', '[]'],
        // Written in the order decided; read sorted. Names beyond ASCII sort otherwise in git (bytes) than here.
        entries: new Map([
          [`${blob}\0src/z.ts`, promoted('yes')],
          [`${blob}\0src/a.ts`, promoted('yes')],
          [`${older}\0src/a.ts`, promoted('yes')],
          [`${blob}\0src/copy-of-a.ts`, promoted('yes')],
          [`${other}\0src/b.ts`, promoted('no')],
          [`${other}\0src/\u{1F600}.ts`, promoted('yes')],
          [`${other}\0src/\uFFFD.ts`, promoted('yes')],
        ]),
      }),
    );
    const test = readPromotions(file)!;
    const has = (p: string, b: string) => test(p, (hex) => hex === b);
    const asked: Array<[string, string, boolean]> = [
      ['src/a.ts', blob, true],
      ['src/a.ts', older, true],
      ['src/a.ts', other, false],
      ['src/b.ts', other, false],
      ['src/copy-of-a.ts', blob, true],
      ['src/\uFFFD.ts', other, true],
      ['src/\u{1F600}.ts', other, true],
      ['src/z.ts', blob, true],
      ['src/y.ts', blob, false],
      ['src/a.ts', blob, true], // again, after the cursor passed it
      ['src/z.ts', other, false],
    ];
    for (const [p, b, expected] of asked) expect([p, b, has(p, b)]).toEqual([p, b, expected]);
    for (const [p, b, expected] of [...asked].reverse()) expect([p, b, has(p, b)]).toEqual([p, b, expected]);
    fs.writeFileSync(file, '{"version":2}');
    expect(readPromotions(file)).toBeNull();
    fs.writeFileSync(file, `delegate-git promoted ${STORE_VERSION}\0src/a.ts\0`); // cut short
    expect(readPromotions(file)).toBeNull();
    fs.writeFileSync(file, `delegate-git promoted ${STORE_VERSION}\0src/a.ts\0${blob}\0`); // control
    expect(readPromotions(file)?.('src/a.ts', (hex) => hex === blob)).toBe(true);
  });
});
