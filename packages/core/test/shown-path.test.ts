import { describe, expect, it } from 'vitest';
import { makeTempRepo } from '../../../test/support/git-repo.js';
import { shownPath } from '../src/shown-path.js';

describe('shownPath', () => {
  it('shows an ordinary path as it is, non-ASCII and spaces included (control)', () => {
    for (const p of ['src/a.ts', 'src/dir with space/ü ñ.ts', '.github/workflows/ci.yml', "it's.ts"])
      expect(shownPath(p)).toBe(p);
  });

  it('C-quotes a path holding a control character, a double quote or a backslash, exactly as git does', () => {
    const names = [
      'new\nline.ts',
      'tab\there.ts',
      'quote"d.ts',
      'back\\slash.ts',
      'bell\x07.ts',
      'esc\x1b[31m.ts',
      'del\x7f.ts',
    ];
    const repo = makeTempRepo();
    try {
      repo.commit(Object.fromEntries(names.map((name) => [name, 'x\n'])));
      // git's own quoting, with non-ASCII left alone as shownPath leaves it.
      const listed = repo.gitText(['-c', 'core.quotePath=false', 'ls-files']).split('\n').filter(Boolean);
      expect(names.map(shownPath).sort()).toEqual([...listed].sort());
    } finally {
      repo.cleanup();
    }
    expect(shownPath('new\nline.ts')).toBe('"new\\nline.ts"');
  });
});
