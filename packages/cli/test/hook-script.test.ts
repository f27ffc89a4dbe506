// Whether a hook script runs the gate, read from its text (rt54 f08): a line of its own, before anything that may end
// the script; and which hooks are ours (rt54 f02), and which git directories a checkout cannot write (rt54 f03).
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { callsGate, gateCall, huskyLine } from '../src/hook-script.js';
import { gitDirShelters, isOurText } from '../src/hooks-in-effect.js';

const sh = (...lines: string[]) => `#!/bin/sh\n${lines.join('\n')}\n`;

describe('callsGate', () => {
  it('takes a line of its own calling the gate, by any runner, with "$@", closed by || exit and a comment', () => {
    for (const line of [
      'delegate-git hook pre-commit',
      'exec delegate-git hook pre-commit "$@"',
      'npx --no-install delegate-git hook pre-commit || exit $?',
      'pnpm exec delegate-git hook pre-commit || exit 1 # the gate',
      "'/usr/bin/node' '/opt/x y/bin/delegate-git.js' hook pre-commit",
      '"$HOME/.local/bin/delegate-git" hook pre-commit $@',
      `  ${huskyLine('pre-commit')}`,
    ])
      expect(callsGate(sh('echo lint', line)), line).toBe(true);
  });

  it('refuses a mention of the gate, or a call that may not happen', () => {
    for (const line of [
      'exit 0 # delegate-git hook pre-commit',
      'true || delegate-git hook pre-commit',
      ': delegate-git hook pre-commit; exit 0',
      'echo delegate-git hook pre-commit',
      '# delegate-git hook pre-commit',
      'delegate-git hook pre-commit; exit 0',
      'delegate-git hook pre-commit > /dev/null &',
      'delegate-git hook pre-commit --skip',
      'delegate-git hook pre-merge-commit',
      'x=$(delegate-git hook pre-commit)',
      'echo "$(delegate-git hook pre-commit)"',
      'h="$(git rev-parse --git-common-dir)/delegate-git/hooks/pre-commit"; echo "$h"',
    ])
      expect(callsGate(sh(line)), line).toBe(false);
  });

  it('refuses a call after anything that may end the script, in a branch or not, or that carries on into it', () => {
    const call = 'delegate-git hook pre-commit';
    for (const before of [
      'exit 0\n# the gate:',
      'exec npx lint-staged',
      'if [ -n "$CI" ]; then\n  exit 0\nfi',
      '[ -n "$CI" ] && exit 0',
      'eval "$SKIP"',
      '. ./setup.sh',
      "cat <<'EOF'",
      'false &&',
      'echo a \\',
      ": '",
      'x="a',
      'echo `',
    ])
      expect(callsGate(sh(before, call)), before).toBe(false);
    // husky 8's own setup line sources a script that only sets husky up; quotes closed on their line hold nothing.
    expect(callsGate(sh('. "$(dirname -- "$0")/_/husky.sh"', call))).toBe(true);
    expect(callsGate(sh(`echo "it's" 'a "b"' \\' # don't`, call))).toBe(true);
  });

  it('reads the hook it is asked about', () => {
    expect(callsGate(sh('delegate-git hook pre-merge-commit'), 'pre-merge-commit')).toBe(true);
    expect(gateCall('delegate-git hook pre-commit', 'pre-merge-commit')).toBe(false);
  });
});

describe('isOurText', () => {
  const ours = '#!/bin/sh\n# delegate-git hook (pre-commit). Refuses commits...\n# fingerprint: 00\n';
  it('finds the marker near the top, where lines added above may have pushed it', () => {
    expect(isOurText(ours)).toBe(true);
    expect(isOurText(ours.replace('#!/bin/sh\n', '#!/bin/sh\nexport PATH="$HOME/bin:$PATH"\nset -x\n'))).toBe(
      true,
    );
  });
  it('takes no mention, nor a marker far down a script, for ours', () => {
    expect(isOurText('#!/bin/sh\n# delegate-git hook pre-commit runs after this\n')).toBe(false);
    expect(isOurText(`#!/bin/sh\n${'echo\n'.repeat(10)}# delegate-git hook (pre-commit). x\n`)).toBe(false);
  });
});

describe('gitDirShelters', () => {
  const top = path.join(path.sep, 'work', 'repo');
  it('shelters a git directory named .git (in any case), or outside the work tree', () => {
    for (const git of ['.git', 'sub/.git', '.GIT', '.git/worktrees/x', '../repo.git'])
      expect(gitDirShelters(top, path.join(top, git)), git).toBe(true);
  });
  it('does not shelter one named otherwise inside the work tree', () => {
    for (const git of ['gd', '.gs', 'tools/.git-dir'])
      expect(gitDirShelters(top, path.join(top, git)), git).toBe(false);
  });
});
