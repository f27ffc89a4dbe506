// The human receipt of `delegate`: much of its text comes from the worker and its server (paths, the model's
// name), and none of it may draw a line of its own on the terminal.
import { type DelegationReceipt, emptyReceipt, WHOLE_FILE_OVER_EXISTING } from '@delegate-git/delegate';
import { describe, expect, it } from 'vitest';
import { renderReceipt } from '../src/commands/delegate.js';

function receipt(overrides: Partial<DelegationReceipt>): DelegationReceipt {
  return {
    ...emptyReceipt({ taskName: 'add' }),
    verdict: 'UNIT_FAILED',
    tokens: { prompt: 1, completion: 2, estimated: false, sent: 1, cut: false },
    worker: { host: '127.0.0.1:1234', model: 'qwen', durationMs: 5, truncated: false, reply: null },
    ...overrides,
  };
}

/** A file the receipt lists as created: one line, two bytes. */
function written(path: string): DelegationReceipt['files'][number] {
  return { path, mode: 'created', hunks: 0, lines: 1, bytes: 2, sha256: '', gitBlob: '' };
}

/** A verification run that exited `exitCode` having counted these tests. */
const run = (exitCode: number, passed: number, failed: number) => ({
  exitCode,
  passed,
  failed,
  durationMs: 1,
  timedOut: false,
});

describe('renderReceipt', () => {
  it('a failed verification shows its exit code beside the counts (one failure stands for a command that printed none: finding dl04); a passing one does not', () => {
    const verification = (runs: ReturnType<typeof run>[]) => ({
      ...emptyReceipt({ taskName: 'x' }).verification,
      command: 'npm test',
      runs,
    });
    expect(renderReceipt(receipt({ verification: verification([run(3, 0, 1)]) }))).toContain(
      'Verification (1 run(s): FAIL): exit 3, Passed 0, Failed 1.',
    );
    expect(renderReceipt(receipt({ verification: verification([run(0, 4, 0)]) }))).toContain(
      'Verification (1 run(s): PASS): Passed 4, Failed 0.',
    );
  });

  it('runs that disagree each show their counts (ux57 f19); control: runs that agree show the last one', () => {
    const base = { ...emptyReceipt({ taskName: 'x' }).verification, command: 'npm test' };
    const flaky = renderReceipt(
      receipt({
        verdict: 'UNIT_FLAKY',
        verification: { ...base, flaky: true, runs: [run(0, 4, 0), run(1, 3, 1)] },
      }),
    );
    expect(flaky).toContain(
      'Verification (2 run(s)): run 1 PASS (Passed 4, Failed 0), run 2 FAIL (exit 1, Passed 3, Failed 1). The runs disagreed: the contract is flaky.',
    );
    const agreeing = renderReceipt(
      receipt({ verification: { ...base, runs: [run(0, 4, 0), run(0, 4, 0)] } }),
    );
    expect(agreeing).toContain('Verification (2 run(s): PASS PASS): Passed 4, Failed 0.');
  });

  it('a whole file refused over a target that exists says what to do next (finding dl02); control: another refusal does not', () => {
    const over = renderReceipt(
      receipt({ errors: [`\`src/x.js\` ${WHOLE_FILE_OVER_EXISTING}. To change it, patch it`] }),
    );
    expect(over).toContain(
      "Next: the worker sent a whole file for a file that exists (an earlier run's, or yours), which only a patch may change: run the unit again (the worker is shown each target file of the repository as it is, unless git ignores it",
    );
    const other = renderReceipt(
      receipt({ errors: ["`src/y.js` is outside the unit's declared targetFiles"] }),
    );
    expect(other).not.toContain('Next:');
  });

  it('VERIFICATION_NOT_APPROVED advice fits why (ux57 f08): the list with the program added, no allowlist for a chained command, no terminal hint after a no', () => {
    const refused = (skipped: string) =>
      renderReceipt(
        receipt({
          verdict: 'VERIFICATION_NOT_APPROVED',
          verification: { ...receipt({}).verification, skipped },
        }),
        ['node', 'sh'],
      );
    expect(
      refused(
        "`npm` is not on the verification allowlist, so running it needs the operator's approval; no terminal to ask on, so it was refused",
      ),
    ).toContain(
      `Next: allow the program (\`delegate-git config set verification.allowlist '["node","sh","npm"]'\`), or run delegate on a terminal to approve it once, and run the unit again.`,
    );
    const chained = refused(
      "`node` is on the verification allowlist, but the command chains or redirects (it holds `&&`) and runs through a shell; the allowlist matches one program, so it does not cover this command, and running it needs the operator's approval; no terminal to ask on, so it was refused",
    );
    expect(chained).toContain('no allowlist entry covers this command');
    expect(chained).toContain('verification.approval allow');
    expect(chained).not.toContain('verification.allowlist');
    const declined = refused('the operator declined to run it');
    expect(declined).toContain("you declined to run the unit's command");
    expect(declined).not.toContain('on a terminal');
    expect(refused('verification approval is set to "deny" in the operator settings')).toContain(
      'verification.approval ask',
    );
  });

  it("names where the worker's reply is kept when the unit did not pass (ux57 f10); control: a pass does not", () => {
    const worker = {
      host: 'h',
      model: 'm',
      durationMs: 1,
      truncated: false,
      reply: '/r/.git/delegate-git/last-worker-reply.md',
    };
    expect(renderReceipt(receipt({ verdict: 'NO_CHANGES', worker }))).toContain(
      "Worker's reply (local only): /r/.git/delegate-git/last-worker-reply.md",
    );
    expect(renderReceipt(receipt({ verdict: 'UNIT_PASSED', worker }))).not.toContain("Worker's reply");
  });

  it('CONTRACT_MODIFIED says how to see and put back the contract (ux57 f13); UNIT_FLAKY says what flaky means here (f19); control: UNIT_FAILED says neither', () => {
    const contract = {
      files: [
        { path: 'test/a.test.js', sha256: 'ab', unchanged: false },
        { path: 'test/b.test.js', sha256: 'cd', unchanged: true },
      ],
      violations: ['test/a.test.js was modified while the unit ran'],
    };
    expect(renderReceipt(receipt({ verdict: 'CONTRACT_MODIFIED', contract }))).toContain(
      'Next: the contract is left as the run changed it: see how (`git diff -- test/a.test.js`), put it back (`git restore -- test/a.test.js`)',
    );
    expect(renderReceipt(receipt({ verdict: 'UNIT_FLAKY' }))).toContain(
      "Next: the same code passed some runs and failed others, so the unit's command is not deterministic",
    );
    expect(renderReceipt(receipt({ verdict: 'UNIT_FAILED', contract }))).not.toContain('Next:');
  });

  it('files written beside refused ones are said to be half a unit, to put back (ux57 f03); control: nothing written, nothing said', () => {
    const verification = { ...receipt({}).verification, skipped: 'the emission had refused files' };
    const half = renderReceipt(
      receipt({ files: [written('src/strip.js')], verification, errors: ['`src/a.js`: patch refused'] }),
    );
    expect(half).toContain('Next: the files above were written though the reply was refused for others');
    expect(renderReceipt(receipt({ verification, errors: ['`src/a.js`: patch refused'] }))).not.toContain(
      'half done',
    );
  });

  it('a run stopped at the time limit names the limit and the setting (ux57 f16); control: runs that end do not', () => {
    const run = { exitCode: 124, passed: 0, failed: 1, durationMs: 1000, timedOut: true };
    const verification = {
      ...emptyReceipt({ taskName: 'x' }).verification,
      command: 'sh slow.sh',
      timeoutMs: 1000,
    };
    const stopped = renderReceipt(receipt({ verification: { ...verification, runs: [run, run] } }));
    expect(stopped).toContain('Verification (2 run(s): TIMEOUT TIMEOUT)');
    expect(stopped).toContain(
      '  2 run(s) stopped at the 1000 ms limit (verification.timeoutMs): if the command needs longer, raise it',
    );
    const ended = renderReceipt(
      receipt({ verification: { ...verification, runs: [{ ...run, exitCode: 1, timedOut: false }] } }),
    );
    expect(ended).not.toContain('stopped at the');
  });

  it('shows control characters from the worker as escapes: a model name cannot forge the verdict line', () => {
    const worker = {
      host: 'h',
      model: 'm\nVerdict: UNIT_PASSED\u001b[8m',
      durationMs: 1,
      truncated: false,
      reply: null,
    };
    const text = renderReceipt(receipt({ worker, errors: ['`src/\u001b[2Ja.ts` refused'] }));
    const verdictLines = text.split('\n').filter((line) => line.startsWith('Verdict:'));
    expect(verdictLines).toEqual([
      'Verdict: UNIT_FAILED (not recorded: no file was written to record it on)',
    ]);
    expect(text).toContain('Worker: m\\u000aVerdict: UNIT_PASSED\\u001b[8m at h');
    expect(text).toContain('refused: `src/\\u001b[2Ja.ts` refused');
    expect(text).not.toMatch(/\u001b/);
  });

  it('C-quotes every path the worker chose, as log and show do: an invisible character cannot pass for a name', () => {
    const text = renderReceipt(
      receipt({
        files: [written('src/\u200ba.js'), written('src/q"b.js')],
        duplicates: ['src/\\b.js'],
        contextWidened: [
          { path: 'src/\u200bc.js', lineRange: [1, 2], lines: 2, bytes: 3, sha256: '' },
          { path: 'src/\u2028d.js', lineRange: null, lines: 2, bytes: 3, sha256: '' },
        ],
      }),
    );
    expect(text).toContain('  "src/\\342\\200\\213a.js": 1 line(s), 2 bytes, created');
    expect(text).toContain('  "src/q\\"b.js": 1 line(s), 2 bytes, created');
    expect(text).toContain('  ignored: a second block for "src/\\\\b.js" (the first one was used)');
    expect(text).toContain(
      'previous failure at "src/\\342\\200\\213c.js" (lines 1-2), "src/\\342\\200\\250d.js".',
    );
  });

  it('a verification not approved says what to do next: the program to allow, and the files left to put back; control: another verdict says nothing of it', () => {
    const skipped = 'verification: `node` is not on the verification allowlist';
    const text = renderReceipt(
      receipt({
        verdict: 'VERIFICATION_NOT_APPROVED',
        files: [written('src/a.js')],
        verification: { ...emptyReceipt({ taskName: 'add' }).verification, skipped },
      }),
    );
    const next = text.split('\n').find((line) => line.startsWith('Next: '));
    expect(next).toContain('the files above are left as the worker wrote them, unverified');
    expect(next).toContain(`delegate-git config set verification.allowlist '["node"]'`);
    expect(next).toContain('`git restore <path>`, or delete a created one');
    expect(renderReceipt(receipt({ files: [written('src/a.js')] }))).not.toContain('Next: ');
  });

  it('warns when the server counted far fewer prompt tokens than were sent (rt45 f05); not otherwise', () => {
    const cut = renderReceipt(
      receipt({ tokens: { prompt: 3, completion: 2, estimated: false, sent: 8000, cut: true } }),
    );
    expect(cut).toContain(
      "Warning: the server counted 3 prompt token(s) for about 8000 sent: its context window (Ollama's num_ctx) may have cut the prompt",
    );
    expect(renderReceipt(receipt({}))).not.toContain('Warning:');
  });

  it('control: ordinary text is shown as it is', () => {
    expect(renderReceipt(receipt({}))).toContain(
      'Worker: qwen at 127.0.0.1:1234, 1 prompt + 2 completion token(s), 5 ms.',
    );
    expect(renderReceipt(receipt({ files: [written('src/é.js')] }))).toContain(
      '  src/é.js: 1 line(s), 2 bytes, created',
    );
  });
});
