// Where init puts the gate's line in a husky hook: it must run, so never after the line that ends the script.
import { describe, expect, it } from 'vitest';
import { withHuskyLine } from '../src/hook-install.js';

const LINE = 'run the gate: delegate-git hook pre-commit';
const place = (script: string) => withHuskyLine(script, LINE, 'pre-commit');

describe('withHuskyLine', () => {
  it('appends to a script that runs to its end, adding the missing final line break', () => {
    expect(place('npm test\n')).toBe(`npm test\n${LINE}\n`);
    expect(place('npm test')).toBe(`npm test\n${LINE}\n`);
    expect(place('')).toBe(`${LINE}\n`);
  });

  it('goes before the first top-level exec or exit, after which nothing runs', () => {
    expect(place('npm test\nexec npx lint-staged\n')).toBe(`npm test\n${LINE}\nexec npx lint-staged\n`);
    expect(place('echo a\nexit 0\necho never\n')).toBe(`echo a\n${LINE}\nexit 0\necho never\n`);
    expect(place('exit\n')).toBe(`${LINE}\nexit\n`);
  });

  it('leaves an indented exec (inside a branch) and words that only begin so (executable, exiting) alone', () => {
    const script = 'if [ -n "$CI" ]; then\n  exit 0\nfi\nexecutable --check\nexiting=1\n';
    expect(place(script)).toBe(`${script}${LINE}\n`);
  });

  it('keeps a script that already runs the gate as it is; a commented-out line does not count', () => {
    const live = `npm test\n${LINE}\n`;
    expect(place(live)).toBe(live);
    expect(place(`# ${LINE}\n`)).toBe(`# ${LINE}\n${LINE}\n`);
    expect(withHuskyLine(`${LINE}\n`, LINE, 'pre-merge-commit')).toBe(`${LINE}\n${LINE}\n`);
  });
});
