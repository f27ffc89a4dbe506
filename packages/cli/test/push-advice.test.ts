// What a refused push is told to do, by the kind of what was refused: each kind's advice appears for that kind only.
// The gates setting each kind are tested end to end (pre-receive.test.ts, key-files.test.ts).
import { SUBMODULE_REFUSED } from '@delegate-git/core/judge';
import { LEDGER_REF } from '@delegate-git/core/notes-ledger';
import { GOVERNANCE_DELETED, PROTECTED_DELETION, type RefusalKind } from '@delegate-git/core/policy';
import { describe, expect, it } from 'vitest';
import { pushRefusalAdvice } from '../src/push-advice.js';

const MAIN = 'refs/heads/main';
const refused = (reason: string, path = 'src/a.ts', kind?: RefusalKind) => ({
  ref: MAIN,
  commit: 'c0ffee',
  path,
  reason,
  kind,
});

describe('pushRefusalAdvice', () => {
  it('content is promoted; a deletion, a key file or a submodule is told what works for it instead', () => {
    const content = pushRefusalAdvice(
      [refused('no verdict: no delegated unit is recorded as writing it')],
      [],
      LEDGER_REF,
    );
    expect(content).toHaveLength(1);
    expect(content[0]).toContain('`delegate-git attest --approve <path>`');

    const deletion = pushRefusalAdvice(
      [refused(PROTECTED_DELETION, 'src/a.ts', 'protected deletion')],
      [],
      LEDGER_REF,
    );
    expect(deletion).toHaveLength(1);
    expect(deletion[0]).toContain('turns protectDeletes off is in force on the branch');
    expect(deletion.join('\n')).not.toContain('attest --approve');

    const keyFile = pushRefusalAdvice(
      [refused(GOVERNANCE_DELETED, '.delegate-git/keys/bob.json', 'governance deletion')],
      [],
      LEDGER_REF,
    );
    expect(keyFile).toEqual([
      'The policy file and key files are never deleted: restore them; to retire a key, revoke it (`delegate-git keys revoke`).',
    ]);

    const submodule = pushRefusalAdvice([refused(SUBMODULE_REFUSED, 'src/sub', 'submodule')], [], LEDGER_REF);
    expect(submodule).toHaveLength(1);
    expect(submodule[0]).toContain('No record promotes a submodule');

    const both = pushRefusalAdvice(
      [refused('no verdict'), refused(SUBMODULE_REFUSED, 'src/sub', 'submodule')],
      [],
      LEDGER_REF,
    );
    expect(both).toHaveLength(2);
  });

  it('a file refused in a commit before the tip is told how to approve that content; control: one refused at the tip', () => {
    const tip = 'c0ffee'.padEnd(40, '0');
    const advise = (tips: Map<string, string>) =>
      pushRefusalAdvice([refused('approved by dev for another version')], [], LEDGER_REF, true, tips).join(
        '\n',
      );
    expect(advise(new Map([[MAIN, tip]]))).not.toContain('before its branch');
    const earlier = advise(new Map([[MAIN, 'beef'.padEnd(40, '0')]]));
    expect(earlier).toContain("A file refused in a commit before its branch's tip");
    expect(earlier).toContain('git checkout <commit> -- <path> && delegate-git attest --approve --staged');
  });

  it('a push that also changes the rules is told to push that change first; control: one that does not', () => {
    const advice = pushRefusalAdvice(
      [refused(PROTECTED_DELETION, 'src/a.ts', 'protected deletion')],
      [MAIN],
      LEDGER_REF,
    );
    expect(advice.at(-1)).toBe(
      `This push also changes the policy or the trust root (${MAIN}), but a push is judged by the rules in force on its branch before it: push the rules change on its own first.`,
    );
    expect(
      pushRefusalAdvice([refused(PROTECTED_DELETION, 'src/a.ts', 'protected deletion')], [], LEDGER_REF).join(
        '\n',
      ),
    ).not.toContain('rules change');
  });

  it('content the rules a push brings refuse is not told to push the rules change first (rt48 f04): it would stay refused', () => {
    const pushed = {
      ...refused('no verdict (under the rules this push brings)'),
      byPushedRules: true as const,
    };
    const advice = pushRefusalAdvice([pushed], [MAIN], LEDGER_REF);
    expect(advice).toHaveLength(1);
    expect(advice[0]).toContain('`delegate-git attest --approve <path>`');
    expect(
      pushRefusalAdvice([pushed, refused('no verdict', 'src/b.ts')], [MAIN], LEDGER_REF).at(-1),
    ).toContain('push the rules change on its own first');
  });

  it('the refused rules change itself (a key file no trusted key approved) is not told to push the rules change first (admin audit a07); control: other content beside it is', () => {
    const keyFile = {
      ...refused('signed by a key that is not in the trust root', '.delegate-git/keys/eve.json'),
      rulesFile: true as const,
    };
    expect(pushRefusalAdvice([keyFile], [MAIN], LEDGER_REF).join('\n')).not.toContain('rules change');
    expect(
      pushRefusalAdvice([keyFile, refused('no verdict', 'src/b.ts')], [MAIN], LEDGER_REF).at(-1),
    ).toContain('push the rules change on its own first');
  });

  it('a rewritten ledger alone is told to sync; a refusal that says what to do itself gets nothing more', () => {
    const rewrite = { ref: LEDGER_REF, reason: 'not a fast-forward', kind: 'ledger rewrite' as const };
    expect(pushRefusalAdvice([rewrite], [], LEDGER_REF)[0]).toContain('run `delegate-git sync`');
    expect(pushRefusalAdvice([{ ref: 'refs/heads/x', reason: 'no policy' }], [], LEDGER_REF)).toEqual([]);
    // No policy in force to check the ledger by: sync, which pushes the same ledger, is refused the same way.
    const noRules = {
      ref: LEDGER_REF,
      reason: 'no policy is in force on this repository to verify the ledger against',
    };
    expect(pushRefusalAdvice([noRules], [], LEDGER_REF)).toEqual([]);
    // A ledger named twice in one push is no ledger to catch up with: sync would not help.
    const repeated = { ref: LEDGER_REF, reason: 'named 2 times in one push', kind: 'repeated ref' as const };
    expect(pushRefusalAdvice([repeated], [], LEDGER_REF)).toEqual([]);
  });

  it('files refused in a push without the ledger are told first to push the ledger with the branch; control: with it, promoting comes first', () => {
    const file = refused('no verdict: no delegated unit is recorded as writing it');
    const without = pushRefusalAdvice([file], [], LEDGER_REF, false);
    expect(without[0]).toContain(`This push brings no change to ${LEDGER_REF}`);
    expect(without[0]).toContain(`git push --atomic <remote> <branch> ${LEDGER_REF}`);
    expect(without[1]).toContain('Promote each file');
    const withLedger = pushRefusalAdvice([file], [], LEDGER_REF, true);
    expect(withLedger).toHaveLength(1);
    expect(withLedger[0]).toContain('Promote each file');
  });

  it('a refused line is told how it may enter, or how to leave it behind: sync, which keeps every line, is not offered', () => {
    const line = {
      ref: LEDGER_REF,
      reason: 'note on blob 0123456789ab: revoked',
      kind: 'ledger line' as const,
    };
    const advice = pushRefusalAdvice([line], [], LEDGER_REF);
    expect(advice).toHaveLength(1);
    expect(advice[0]).toContain('passes once that key file is there');
    expect(advice[0]).toContain(
      'git update-ref refs/notes/delegations refs/notes/remotes/origin/delegations',
    );
    expect(advice[0]).not.toContain('catch up with the server');
  });
});
