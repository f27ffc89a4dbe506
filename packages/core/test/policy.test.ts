import picomatch from 'picomatch';
import { describe, expect, it } from 'vitest';
import type { DelegateGitError } from '../src/errors.js';
import {
  adoptGlobExpressions,
  foldedPath,
  globExpressions,
  globsCoverBeneath,
} from '../src/governed-paths.js';
import { governedMatcher, isGovernanceFile, type Policy, parsePolicy, policyText } from '../src/policy.js';
import { refusalWith } from './support.js';

const ID = 'f3a1c2d4-0000-4000-8000-000000000001';

function policyOf(fields: Record<string, unknown>): Policy {
  return parsePolicy(JSON.stringify({ version: 1, repositoryId: ID, ...fields }));
}

function refusalOf(fields: Record<string, unknown>, source?: string): DelegateGitError {
  return refusalWith('POLICY', () =>
    parsePolicy(JSON.stringify({ version: 1, repositoryId: ID, ...fields }), source),
  );
}

describe('parsePolicy', () => {
  it('fills the defaults for a minimal policy', () => {
    expect(policyOf({})).toEqual({
      version: 1,
      repositoryId: ID,
      keysDir: '.delegate-git/keys',
      protect: [],
      exclude: [],
      requireReview: false,
      reviewThreshold: 1,
      mode: 'enforce',
      protectDeletes: false,
    });
  });

  it('accepts every documented field (control for the refusals below)', () => {
    const full = {
      version: 1,
      repositoryId: ID,
      keysDir: 'keys',
      protect: ['src/**', 'package.json'],
      exclude: ['src/generated/**'],
      requireReview: true,
      reviewThreshold: 2,
      mode: 'warn',
      protectDeletes: true,
    };
    expect(parsePolicy(JSON.stringify(full))).toEqual(full);
  });

  it('round-trips through policyText', () => {
    const policy = policyOf({ protect: ['src/**'], requireReview: true });
    expect(parsePolicy(policyText(policy))).toEqual(policy);
    expect(policyText(policy).endsWith('}\n')).toBe(true);
  });

  it('drops a trailing slash from the keys directory', () => {
    expect(policyOf({ keysDir: 'keys/' }).keysDir).toBe('keys');
    expect(policyOf({ keysDir: '.delegate-git/trust' }).keysDir).toBe('.delegate-git/trust'); // beside the policy
  });

  it('refuses an unknown field, naming the file and the field', () => {
    const error = refusalOf({ requireReviews: true });
    expect(error.code).toBe('POLICY');
    expect(error.message).toMatch(
      /^\.delegate-git\/policy\.json: the file has unknown field\(s\) "requireReviews"\./,
    );
  });

  it('names the snapshot it was read from', () => {
    expect(refusalOf({ mode: 'off' }, '.delegate-git/policy.json (the index)').message).toMatch(
      /^\.delegate-git\/policy\.json \(the index\): field mode/,
    );
  });

  it.each([
    ['version', 2],
    ['repositoryId', 'short'],
    ['repositoryId', 'has spaces in it'],
    ['keysDir', '../keys'],
    ['keysDir', '/etc/keys'],
    ['keysDir', 'a\\b'],
    ['keysDir', ''],
    ['keysDir', '.delegate-git'], // it would hold the policy file
    ['keysDir', './.Delegate-Git/'],
    ['keysDir', '.delegate-git/policy.json'], // the policy file's own path
    ['keysDir', '.delegate-git/policy.json/keys'],
    ['keysDir', '.git/keys'], // git tracks nothing there
    ['keysDir', 'trust/.GIT/keys'],
    ['protect', 'src/**'],
    ['protect', ['']],
    ['exclude', [1]],
    ['requireReview', 'yes'],
    ['reviewThreshold', 0],
    ['reviewThreshold', 1.5],
    ['reviewThreshold', 101],
    ['mode', 'off'],
    ['protectDeletes', 1],
  ])('refuses %s = %j, naming the field', (field, value) => {
    const error = refusalOf({ [field]: value });
    expect(error.code).toBe('POLICY');
    expect(error.message.startsWith(`.delegate-git/policy.json: field ${field}`)).toBe(true);
    expect(error.message).toContain('Fix the policy file');
  });

  it('refuses a glob with more than three `*` in one segment, whose matching backtracks for hours (rt41 f04); three, and `**`, are taken', () => {
    const refused = refusalOf({ exclude: ['src/*a*a*a*a*a*a*a*b'] });
    expect(refused.message).toContain('field exclude.0 has more than 3 `*` in one path segment');
    expect(refusalOf({ protect: ['ok/**', 'x/*-*-*-*.ts'] }).message).toContain(
      'field protect.1 has more than 3',
    );
    // `**` inside a segment is a `*` to picomatch: counted as one (rt43 f01).
    expect(refusalOf({ exclude: ['src/*a**a**a**a**a**a**a*b'] }).message).toContain(
      'field exclude.0 has more than 3',
    );
    const taken = policyOf({ protect: ['**/*.test.*', '**/a/**/*-*-*.ts', 'src/**'] });
    expect(taken.protect).toHaveLength(3);
  });

  it('says what a field expected', () => {
    expect(refusalOf({ requireReview: 'yes' }).message).toContain(
      'field requireReview must be boolean (got string)',
    );
  });

  it('refuses a missing repository id and text that is not JSON', () => {
    expect(() => parsePolicy(JSON.stringify({ version: 1 }))).toThrow(/field repositoryId/);
    expect(() => parsePolicy('{"version": 1,')).toThrow(/^\.delegate-git\/policy\.json is not valid JSON/);
  });
});

describe('governedMatcher', () => {
  it('governs protected paths, and paths the ledger has ever recorded', () => {
    const governed = governedMatcher(policyOf({ protect: ['src/**', 'package.json'] }));
    expect(governed('src/a.ts', false)).toBe(true);
    expect(governed('src/deep/b.ts', false)).toBe(true);
    expect(governed('package.json', false)).toBe(true);
    expect(governed('README.md', false)).toBe(false);
    expect(governed('README.md', true)).toBe(true);
    expect(governed('lib/package.json', false)).toBe(false);
  });

  it('folds case as Unicode does, character by character: ſ is s and ς is σ, while ß and ﬁ keep their length for ?', () => {
    const governed = governedMatcher(policyOf({ protect: ['src/**', 'cfg/?.conf', 'docs/\u03c3.md'] }));
    expect(governed('\u017frc/a.ts', false)).toBe(true); // ſrc
    expect(governed('docs/\u03c2.md', false)).toBe(true); // ς
    expect(governed('cfg/\u00df.conf', false)).toBe(true); // ß: one character, as ? asks
    expect(governed('cfg/\ufb01.conf', false)).toBe(true); // ﬁ
    expect(governed('cfg/ab.conf', false)).toBe(false); // control: two characters
    expect(governed('\u017frc2/a.ts', false)).toBe(false); // control: another directory
    expect(foldedPath('Stra\u00dfe/\u017f')).toBe('stra\u00dfe/s');
  });

  it('composes again after folding: J with a combining caron is ǰ, as a checkout that folds them places it', () => {
    const governed = governedMatcher(policyOf({ protect: ['\u01f0obs/**'] })); // ǰobs
    expect(governed('J\u030cobs/x', false)).toBe(true); // J̌obs: no composed capital J with caron
    expect(governed('\u01f0obs/x', false)).toBe(true);
    expect(governed('Jobs/x', false)).toBe(false); // control: no caron
    expect(foldedPath('J\u030cobs')).toBe('\u01f0obs');
  });

  it('governs a path whose name holds a line break, as any other (picomatch alone would not match it under **)', () => {
    const governed = governedMatcher(
      policyOf({ protect: ['src/**', 'lib/*.ts', '**/*.sql'], exclude: ['src/gen/**'] }),
    );
    for (const brk of ['\n', '\r', '\u2028', '\u2029']) {
      for (const p of [`src/a${brk}b.ts`, `src/dir${brk}/x.ts`, `lib/a${brk}.ts`, `db/m${brk}/1.sql`])
        expect(governed.isProtected(p), JSON.stringify(p)).toBe(true);
      expect(governed.isProtected(`src/gen/a${brk}b.ts`)).toBe(false); // exclude matches it too
      expect(governed.isProtected(`docs/a${brk}b.md`)).toBe(false); // control: outside protect
    }
  });

  it('matches dot files and dot directories', () => {
    const governed = governedMatcher(policyOf({ protect: ['**'] }));
    expect(governed('.github/workflows/ci.yml', false)).toBe(true);
    expect(governed('src/.env', false)).toBe(true);
  });

  it('exclude removes protected and recorded paths alike', () => {
    const governed = governedMatcher(
      policyOf({ protect: ['src/**'], exclude: ['src/generated/**', 'docs/**'] }),
    );
    expect(governed('src/generated/x.ts', false)).toBe(false);
    expect(governed('src/generated/x.ts', true)).toBe(false);
    expect(governed('docs/a.md', true)).toBe(false);
    expect(governed('src/a.ts', false)).toBe(true);
  });

  it('always governs the policy file and the keys directory, even when excluded', () => {
    const policy = policyOf({ exclude: ['**'] });
    const governed = governedMatcher(policy);
    expect(governed('src/a.ts', true)).toBe(false); // control: exclude does exclude
    expect(governed('.delegate-git/policy.json', false)).toBe(true);
    expect(governed('.delegate-git/keys/alice.json', false)).toBe(true);
    expect(governed('.delegate-git/other.json', false)).toBe(false);
    expect(governed.isProtected('.delegate-git/policy.json')).toBe(true);
    expect(governed.isProtected('.delegate-git/keys/alice.json')).toBe(true);
  });

  it('keeps the keys directory as git names it: `./trust/` governs trust/*, and `.` alone is refused', () => {
    for (const [given, kept] of [
      ['./trust', 'trust'],
      ['./trust/', 'trust'],
      ['keys//team/.', 'keys/team'],
      ['.delegate-git/keys', '.delegate-git/keys'],
    ]) {
      const policy = policyOf({ keysDir: given });
      expect(policy.keysDir, given).toBe(kept);
      expect(isGovernanceFile(policy, `${kept}/mallory.json`), given).toBe(true);
    }
    for (const bad of ['.', './', './/.'])
      expect(() => policyOf({ keysDir: bad }), bad).toThrow(/must name a directory/);
  });

  it('follows a custom keys directory', () => {
    const policy = policyOf({ keysDir: 'keys/', exclude: ['keys/**', '.delegate-git/**'] });
    const governed = governedMatcher(policy);
    expect(governed('keys/alice.json', false)).toBe(true);
    expect(governed('keys/nested/bob.json', false)).toBe(true);
    expect(governed('.delegate-git/policy.json', false)).toBe(true);
    expect(governed('.delegate-git/keys/alice.json', false)).toBe(false); // no longer the keys directory
    expect(governed('keysafe/x.json', false)).toBe(false); // a prefix of the name is not the directory
    expect(isGovernanceFile(policy, 'keys')).toBe(false);
  });

  it('protect and the governance paths ignore Unicode normalization (macOS takes NFD and NFC for one name)', () => {
    const nfc = 'donn\u00e9es';
    const nfd = 'donne\u0301es';
    for (const [glob, path] of [
      [`${nfc}/**`, `${nfd}/x.js`],
      [`${nfd}/**`, `${nfc}/x.js`],
      [`${nfc}/**`, `${nfc}/x.js`],
    ]) {
      const governed = governedMatcher(policyOf({ protect: [glob!] }));
      expect([glob, path, governed.classify(path!)]).toEqual([glob, path, 'governed']);
    }
    const keys = governedMatcher(policyOf({ keysDir: `${nfc}/keys` }));
    expect(keys.classify(`${nfd}/keys/evil.json`)).toBe('governed');
    // Control: another name, in either form, is not governed.
    const other = governedMatcher(policyOf({ protect: [`${nfc}/**`] }));
    expect(other.classify('donnees/x.js')).toBe('if-recorded');
  });

  it('the policy and keys paths ignore case (a file system that ignores case checks them out in their place)', () => {
    const governed = governedMatcher(policyOf({ keysDir: 'Keys', exclude: ['**'] }));
    for (const p of [
      '.DELEGATE-GIT/policy.json',
      '.delegate-git/Policy.JSON',
      'keys/evil.json',
      'KEYS/x.json',
    ])
      expect([p, governed.classify(p)]).toEqual([p, 'governed']);
    // Control: other names in those directories, and a prefix of the keys directory's name, stay ungoverned.
    for (const p of ['.DELEGATE-GIT/other.json', 'KEYSAFE/x.json', 'policy.json'])
      expect([p, governed.classify(p)]).toEqual([p, 'ungoverned']);
  });

  it('isProtected: protect minus exclude, without the ledger', () => {
    const governed = governedMatcher(policyOf({ protect: ['src/**'], exclude: ['src/gen/**'] }));
    expect(governed.isProtected('src/a.ts')).toBe(true);
    expect(governed.isProtected('src/gen/a.ts')).toBe(false);
    expect(governed.isProtected('README.md')).toBe(false);
    expect(governed('README.md', true)).toBe(true); // governed by the ledger, but not protected
  });

  it('classify: the policy alone decides, or says the ledger must be asked', () => {
    const governed = governedMatcher(policyOf({ protect: ['src/**'], exclude: ['src/gen/**'] }));
    expect(governed.classify('src/a.ts')).toBe('governed');
    expect(governed.classify('src/gen/a.ts')).toBe('ungoverned');
    expect(governed.classify('README.md')).toBe('if-recorded');
    expect(governed.classify('.delegate-git/policy.json')).toBe('governed');
  });

  it('a path with a segment longer than any file system keeps is governed without matching, in no time (rt41 f04); a shorter one is matched', () => {
    const started = Date.now();
    const worst = governedMatcher(policyOf({ protect: ['docs/**'], exclude: ['src/*a*a*b'] }));
    const long = `src/${'a'.repeat(4000)}`;
    expect(worst(long, false)).toBe(true);
    expect(worst.classify(long)).toBe('governed');
    // Three stars against the longest name matched, refused only once every split is tried: still quick.
    expect(worst(`src/${'a'.repeat(255)}`, false)).toBe(false);
    expect(Date.now() - started).toBeLessThan(2_000);
    // Control: a name the glob matches is excluded, and one under docs/ protected.
    expect(worst.classify('src/xaayaab')).toBe('ungoverned');
    expect(worst.classify(`docs/${'a'.repeat(255)}`)).toBe('governed');
  });

  it('matches globs exactly as picomatch does', () => {
    const globs = [
      'src/**',
      '*.md',
      '**/*.test.ts',
      'a/{b,c}/*.js',
      'lib/[xy].ts',
      '!(docs)/**',
      'exact[1].txt',
      'x/?.ts',
    ];
    const paths = [
      'src/a.ts',
      'src/.env',
      'README.md',
      'docs/README.md',
      'a/b/c.js',
      'a/d/c.js',
      'lib/x.ts',
      'lib/z.ts',
      'docs/x',
      'other/x',
      'exact[1].txt',
      'exact1.txt',
      'x/a.ts',
      'x/ab.ts',
      't/u/v.test.ts',
      '.hidden',
    ];
    for (const glob of globs) {
      const reference = picomatch(glob, { dot: true, nocase: true });
      const governed = governedMatcher(policyOf({ protect: [glob] }));
      for (const p of [...paths, ...paths.map((p) => p.toUpperCase())])
        expect(governed.isProtected(p), `${glob} on ${p}`).toBe(reference(p));
    }
  });

  it('protect ignores case (git checks SRC/x out into src/ where case is ignored); exclude does not', () => {
    const governed = governedMatcher(
      policyOf({ protect: ['src/**', 'Docs/API.md'], exclude: ['src/gen/**'] }),
    );
    for (const p of ['SRC/evil.js', 'Src/a.ts', 'src/A.TS', 'docs/api.md', 'DOCS/API.MD'])
      expect(governed.classify(p), p).toBe('governed');
    expect(governed.classify('src/gen/a.ts')).toBe('ungoverned');
    // Excluding less is the safe side: a case variant of an excluded path stays protected.
    expect(governed.classify('SRC/GEN/a.ts')).toBe('governed');
    // Control: a path no glob names, in any case.
    expect(governed.classify('lib/src/a.ts')).toBe('if-recorded');
  });
});

describe('links: what a glob could reach beneath a path', () => {
  it("a path equal to, above or below a glob's base is covered; a sibling is not", () => {
    const covers = globsCoverBeneath(['src/**/*.js']);
    for (const p of ['src', 'src/util', 'src/a/b/c']) expect(covers(p), p).toBe(true);
    for (const p of ['lib', 'docs/link', 'srcx', 'sr']) expect(covers(p), p).toBe(false);
    const deep = globsCoverBeneath(['src/core/**']);
    for (const p of ['src', 'src/core', 'src/core/x']) expect(covers(p) && deep(p), p).toBe(true);
    for (const p of ['src/lib', 'lib', 'src/cor']) expect(deep(p), p).toBe(false);
  });

  it('ignores case, as protect does', () => {
    const covers = globsCoverBeneath(['Src/Core/**']);
    for (const p of ['SRC', 'src/CORE', 'sRc/core/deep']) expect(covers(p), p).toBe(true);
    expect(covers('src/other')).toBe(false);
  });

  it('a glob with an empty base covers every path, unless it matches only paths too shallow', () => {
    const any = globsCoverBeneath(['**/*.js']);
    for (const p of ['a', 'docs/link', 'x/y/z']) expect(any(p), p).toBe(true);
    // `*` never matches a slash: `*.js` names top-level files only, and no link puts a file at the top.
    expect(globsCoverBeneath(['*.js'])('docs')).toBe(false);
    expect(globsCoverBeneath(['*/*.js'])('docs')).toBe(true);
    expect(globsCoverBeneath(['*/*.js'])('docs/sub')).toBe(false);
  });

  it('counts segments only where every segment is fixed', () => {
    const shallow = globsCoverBeneath(['src/*.js']);
    expect(shallow('src')).toBe(true);
    expect(shallow('src/lib')).toBe(false);
    // A literal path: a link at any of its directories brings it.
    const literal = globsCoverBeneath(['src/a/b.js']);
    for (const p of ['src', 'src/a']) expect(literal(p), p).toBe(true);
    for (const p of ['src/a/b.js', 'src/b']) expect(literal(p), p).toBe(false);
    // Braces, brackets and extglobs may hold a slash or repeat: any depth.
    expect(globsCoverBeneath(['src/{a,b/c}/*.js'])('src/b/c')).toBe(true);
    expect(globsCoverBeneath(['src/a[/]b/*.js'])('src/x/y')).toBe(true);
    // A negated glob matches what lies outside it: everywhere.
    expect(globsCoverBeneath(['!src/**'])('lib')).toBe(true);
    expect(globsCoverBeneath([])('src')).toBe(false);
  });

  it('the matcher governs a link by what it reaches; a file only by its own path; exclude takes either out', () => {
    const m = governedMatcher(policyOf({ protect: ['src/**/*.js'], exclude: ['src/vendor'] }));
    expect(m.classify('src/util')).toBe('if-recorded');
    expect(m.classify('src/util', true)).toBe('governed');
    expect(m.isProtected('SRC/util', true)).toBe(true);
    expect(m('src/util', false, true)).toBe(true);
    expect(m.classify('docs/link', true)).toBe('if-recorded');
    expect(m('docs/link', true, true)).toBe(true); // recorded: governed as a file there would be
    expect(m.classify('src/vendor', true)).toBe('ungoverned');
    expect(m.coversBeneath('src')).toBe(true);
  });

  it("a link over the policy's or the keys' directory is always governed, whatever exclude says", () => {
    const m = governedMatcher(policyOf({ protect: [], exclude: ['**'] }));
    for (const p of ['.delegate-git', '.DELEGATE-GIT/keys', '.delegate-git/keys'])
      expect(m.classify(p, true), p).toBe('governed');
    expect(m.classify('.delegate-git', false)).toBe('ungoverned');
    expect(m.classify('.delegate-git/other', true)).toBe('ungoverned');
  });
});

describe('glob expressions kept with a validated policy', () => {
  const policyOf = (protect: string[]) =>
    parsePolicy(JSON.stringify({ version: 1, repositoryId: 'example-repo-1', protect }));

  it('are what picomatch compiles, and an adopted one is used as it is (it stands for the glob from then on)', () => {
    const kept = globExpressions(policyOf(['kept/**']));
    expect(kept).toEqual([{ glob: 'kept/**', nocase: true, ...sourceOf('kept/**', true) }]);
    // A glob not compiled yet in this process takes the expression given for it, here one that matches only "x";
    // one kept before expressions were dotAll (no "s" flag), or without the case its use needs, is compiled again.
    adoptGlobExpressions([
      { glob: 'adopted/**', nocase: true, source: '^x$', flags: 'is' },
      { glob: 'stale/**', nocase: true, source: '^x$', flags: 'i' },
      { glob: 'cased/**', nocase: true, source: '^x$', flags: 's' },
    ]);
    const cased = governedMatcher(policyOf(['cased/**']));
    expect(cased.classify('CASED/a.ts')).toBe('governed');
    const stale = governedMatcher(policyOf(['stale/**']));
    expect(stale.classify('stale/a\nb.ts')).toBe('governed');
    expect(stale.classify('x')).toBe('if-recorded');
    const adopted = governedMatcher(policyOf(['adopted/**']));
    expect(adopted.classify('adopted/a.ts')).toBe('if-recorded');
    expect(adopted.classify('x')).toBe('governed');
    // Control: one never adopted is compiled as picomatch does; malformed entries are ignored.
    adoptGlobExpressions([{ glob: 'other/**', source: '(' }, { glob: 7 }, 'x', null]);
    adoptGlobExpressions({ not: 'a list' });
    const other = governedMatcher(policyOf(['other/**']));
    expect(other.classify('other/a.ts')).toBe('governed');
    expect(other.classify('x')).toBe('if-recorded');
  });
});

/** picomatch's expression for the glob, made dotAll (so `**` also matches a name holding a line break). */
function sourceOf(glob: string, nocase: boolean): { source: string; flags: string } {
  const re = picomatch.makeRe(glob, { dot: true, nocase });
  return { source: re.source, flags: `${re.flags}s` };
}
