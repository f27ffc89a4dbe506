// Where init puts the gate's line in a husky hook: it must run, so never after the line that ends the script.
import { describe, expect, it } from 'vitest';
import { huskyLine, runsLast, withHuskyLine } from '../src/hook-script.js';

const LINE = huskyLine('pre-commit');
const place = (script: string) => withHuskyLine(script, LINE);

describe('withHuskyLine', () => {
  it('appends to a script that runs to its end, adding the missing final line break', () => {
    expect(place('npm test\n')).toBe(`npm test\n${LINE}\n`);
    expect(place('npm test')).toBe(`npm test\n${LINE}\n`);
    expect(place('')).toBe(`${LINE}\n`);
  });

  it('goes before a closing exec, exit or return (the last command), after which nothing runs', () => {
    expect(place('npm test\nexec npx lint-staged\n')).toBe(`npm test\n${LINE}\nexec npx lint-staged\n`);
    expect(place('echo a\nreturn 0\n')).toBe(`echo a\n${LINE}\nreturn 0\n`);
    expect(place('exit\n')).toBe(`${LINE}\nexit\n`);
    expect(place('npm test\nexit 0\n\n# done\n')).toBe(`npm test\n${LINE}\nexit 0\n\n# done\n`);
  });

  it('reads an exit at the start of a line that is not the last command as one that may end the script early', () => {
    // A branch's body need not be indented: the exit of `if …; then` / `exit 0` / `fi`, or of a case arm.
    for (const body of [
      'if [ "$SKIP_LINT" = 1 ]; then\nexit 0\nfi\necho lint-ok\n',
      'case "$(git rev-parse --abbrev-ref HEAD)" in\nwip/*)\nexit 0\n;;\nesac\necho lint-ok\n',
      'echo a\nexit 0\necho never\n',
    ])
      expect(place(`#!/usr/bin/env sh\n${body}`)).toBe(`#!/usr/bin/env sh\n${LINE}\n${body}`);
  });

  it('goes right after the shebang where the script may end before its end line, or a here-document may hold it', () => {
    for (const body of [
      'if [ -n "$CI" ]; then\n  exit 0\nfi\nnpm test\n',
      '[ -n "$CI" ] && exit 0\nnpm test\n',
      'if true; then exec a; else exec b; fi\n',
      'cat <<EOF\nexit 1\nEOF\nnpm test\n',
      '[ -n "$CI" ] && return 0\nnpm test\n',
      'eval "exit 0"\nnpm test\n',
      '. ./some-setup.sh\nnpm test\n',
    ])
      expect(place(`#!/usr/bin/env sh\n${body}`)).toBe(`#!/usr/bin/env sh\n${LINE}\n${body}`);
    expect(place('npm test; exit 0\n')).toBe(`${LINE}\nnpm test; exit 0\n`);
  });

  it("goes first where it would change the script's answer: inside a line that carries on, or before an exit that passes on the last status", () => {
    for (const body of ['lint &&\nexit 0\n', 'set +e\nlint\nexit $?\n', 'npm test\nexit\n', 'a |\nexit 0\n'])
      expect(place(`#!/usr/bin/env sh\n${body}`)).toBe(`#!/usr/bin/env sh\n${LINE}\n${body}`);
  });

  it("goes after husky 8's setup line, which runs the script again from its start, where it goes first", () => {
    const setup = '#!/usr/bin/env sh\n. "$(dirname -- "$0")/_/husky.sh"\n';
    const guarded = '[ -n "$CI" ] && exit 0\nnpx lint-staged\n';
    expect(place(`${setup}${guarded}`)).toBe(`${setup}${LINE}\n${guarded}`);
  });

  it('says whether the line runs after every other command: at the end or before a closing exit, not first or before exec', () => {
    for (const script of ['npm test\n', 'npm test\nexit 0\n'])
      expect(runsLast(place(script), LINE)).toBe(true);
    for (const script of ['npm test\nexec npx lint-staged\n', '[ -n "$CI" ] && exit 0\nnpm test\n'])
      expect(runsLast(place(script), LINE)).toBe(false);
  });

  it("reads husky 8's own setup line as no end: the line goes after the formatter, as in any plain script", () => {
    const husky8 = '#!/usr/bin/env sh\n. "$(dirname -- "$0")/_/husky.sh"\n\nnpx lint-staged\n';
    expect(place(husky8)).toBe(`${husky8}${LINE}\n`);
  });

  it('reads words that only begin so (executable, exiting) as no end', () => {
    const script = 'executable --check\nexiting=1\n';
    expect(place(script)).toBe(`${script}${LINE}\n`);
  });

  it('places its own line again (an earlier release put it after a closing exec, without ending the script)', () => {
    const earlier = 'an earlier form of the line';
    expect(withHuskyLine(`npm test\nexec npx lint-staged\n${earlier}\n`, LINE, [earlier])).toBe(
      `npm test\n${LINE}\nexec npx lint-staged\n`,
    );
    const placed = `npm test\n${LINE}\n`;
    expect(place(placed)).toBe(placed);
  });

  it('counts only its own line: a script that merely names the gate (an echo, a comment) still gets it', () => {
    expect(place('echo "run delegate-git hook pre-commit"\n')).toBe(
      `echo "run delegate-git hook pre-commit"\n${LINE}\n`,
    );
    expect(place('# npx delegate-git hook pre-commit\n')).toBe(
      `# npx delegate-git hook pre-commit\n${LINE}\n`,
    );
  });

  it("ends the script with the gate's status when it refuses", () => {
    expect(LINE).toContain('"$h" || exit $?');
    expect(LINE).toContain('"$d" hook pre-commit || exit $?');
  });
});
