import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { toRepositoryPath } from '../src/checks.js';

const base = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'repository-path-')));
afterAll(() => fs.rmSync(base, { recursive: true, force: true }));
const top = path.join(base, 'work');
fs.mkdirSync(path.join(top, 'src'), { recursive: true });
fs.writeFileSync(path.join(top, '..weird.ts'), 'x');
fs.writeFileSync(path.join(top, 'src', 'a.ts'), 'a');
// The checkout reached through a link, and a link inside it to a file outside.
fs.symlinkSync(top, path.join(base, 'link'));
fs.writeFileSync(path.join(base, 'outside.ts'), 'o');
fs.symlinkSync(path.join(base, 'outside.ts'), path.join(top, 'src', 'to-outside.ts'));
// Links to directories: to the git directory, to one of the work tree, and one to nothing.
fs.mkdirSync(path.join(top, '.git'));
fs.writeFileSync(path.join(top, '.git', 'config'), '[core]\n');
fs.mkdirSync(path.join(top, 'lib'));
fs.writeFileSync(path.join(top, 'lib', 'x.ts'), 'x');
fs.symlinkSync('../.git', path.join(top, 'src', 'gd'));
fs.symlinkSync('../lib', path.join(top, 'src', 'lib'));
fs.symlinkSync('../nowhere', path.join(top, 'src', 'dangling'));

describe('toRepositoryPath', () => {
  it('places a file whose name starts with two dots inside; `..`, `../x` and the top itself are outside', () => {
    expect(toRepositoryPath(top, top, '..weird.ts')).toBe('..weird.ts');
    expect(toRepositoryPath(top, path.join(top, 'src'), '../..weird.ts')).toBe('..weird.ts');
    for (const outside of ['..', '../outside.ts', '.', path.join(base, 'outside.ts')])
      expect(() => toRepositoryPath(top, top, outside), outside).toThrow(/is outside the repository/);
  });

  it('places a path named through a link to the checkout by its physical directory; a link in the checkout stays as named', () => {
    expect(toRepositoryPath(top, base, path.join(base, 'link', 'src', 'a.ts'))).toBe('src/a.ts');
    expect(toRepositoryPath(top, path.join(base, 'link'), 'src/a.ts')).toBe('src/a.ts');
    expect(toRepositoryPath(top, top, 'src/to-outside.ts')).toBe('src/to-outside.ts');
    // A file not there yet, in a directory not there yet, is named as it is.
    expect(toRepositoryPath(top, top, 'src/new/b.ts')).toBe('src/new/b.ts');
    expect(() => toRepositoryPath(top, base, path.join(base, 'elsewhere', 'a.ts'))).toThrow(/outside/);
  });

  it('refuses a path inside a git directory, whatever its case (rt52 f05); a name that only starts with .git is a file', () => {
    for (const inGitDir of ['.git/config', '.GIT/config', 'sub/.git/HEAD', '.git'])
      expect(() => toRepositoryPath(top, top, inGitDir), inGitDir).toThrow(
        /is inside a git directory \(\.git\), which no commit can hold/,
      );
    expect(toRepositoryPath(top, top, '.gitignore')).toBe('.gitignore');
    expect(toRepositoryPath(top, top, 'src/.github/x.yml')).toBe('src/.github/x.yml');
  });

  it('refuses a path beyond a symbolic link, as git does (rt53 f05); a link itself, or a path that passes none, is taken', () => {
    for (const [beyond, link] of [
      ['src/gd/config', 'src/gd'],
      ['src/lib/x.ts', 'src/lib'],
      ['src/dangling/y.ts', 'src/dangling'],
    ] as const)
      expect(() => toRepositoryPath(top, top, beyond), beyond).toThrow(
        `${beyond} is beyond a symbolic link (${link}), so it is no file of the repository`,
      );
    // Named from inside the link's directory, relative to it.
    expect(() => toRepositoryPath(top, path.join(top, 'src'), 'gd/config')).toThrow(
      'gd/config is beyond a symbolic link (src/gd)',
    );
    // Controls: the links themselves (git tracks a link as a file), the file where it really is, a file under a file.
    for (const named of ['src/gd', 'src/lib', 'src/dangling', 'src/to-outside.ts', 'lib/x.ts', 'src/a.ts'])
      expect(toRepositoryPath(top, top, named), named).toBe(named);
    expect(toRepositoryPath(top, top, 'src/a.ts/b')).toBe('src/a.ts/b');
  });
});
