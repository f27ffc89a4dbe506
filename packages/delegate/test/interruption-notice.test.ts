import { describe, expect, it } from 'vitest';
import { signalExitCode } from '../src/interruption.js';
import { interruptionNotice } from '../src/interruption-notice.js';

describe('interruptionNotice: what an interrupted delegation says', () => {
  it('before anything was written', () => {
    expect(interruptionNotice('SIGINT', { step: 'asking' })).toBe(
      'interrupted (SIGINT) before any file was written (the request to the worker, if sent, was abandoned): nothing was written and nothing was recorded. Run the unit again to delegate it anew.',
    );
  });

  it('while verifying, every file put back', () => {
    expect(interruptionNotice('SIGTERM', { step: 'verifying', written: ['src/b.js'], unrestored: [] })).toBe(
      'interrupted (SIGTERM) while verifying: the 1 file(s) the worker wrote (src/b.js) were put back as they were, and nothing was recorded. Run the unit again to delegate it anew.',
    );
  });

  it('while verifying, a file that could not be put back is named as left, with why', () => {
    expect(
      interruptionNotice('SIGINT', {
        step: 'verifying',
        written: ['src/a.js', 'src/b.js'],
        unrestored: [{ path: 'src/b.js', reason: 'EACCES: permission denied, unlink' }],
      }),
    ).toBe(
      'interrupted (SIGINT) while verifying, and not every file the worker wrote could be put back: src/b.js (EACCES: permission denied, unlink) is left as the worker wrote it, with no verdict recorded. The other 1 file(s) (src/a.js) were put back as they were. Nothing was recorded. Put back or delete what is left by hand (git status shows it), then run the unit again.',
    );
  });

  it('while verifying, a file that could not be put back: the copy of what it held is named', () => {
    expect(
      interruptionNotice('SIGINT', {
        step: 'verifying',
        written: ['src/a.js', 'src/b.js'],
        unrestored: [
          { path: 'src/a.js', reason: 'ENOSPC: no space left on device, write', copy: '/r/.git/kept/1-ab/0' },
        ],
      }),
    ).toBe(
      'interrupted (SIGINT) while verifying, and not every file the worker wrote could be put back: src/a.js (ENOSPC: no space left on device, write; what it held before is kept in /r/.git/kept/1-ab/0) is left as the worker wrote it, with no verdict recorded. The other 1 file(s) (src/b.js) were put back as they were. Nothing was recorded. Put back what is left by hand from the copy named, then run the unit again; remove the copy once done.',
    );
    expect(
      interruptionNotice('SIGTERM', {
        step: 'verifying',
        written: ['src/a.js', 'src/new.js'],
        unrestored: [
          { path: 'src/a.js', reason: 'EIO', copy: '/k/0' },
          { path: 'src/new.js', reason: 'EIO', copy: null },
        ],
      }),
    ).toMatch(
      /Put back what is left by hand from the copy named and delete what the worker created, then run the unit again; remove the copy once done\.$/,
    );
  });

  it('while recording, when the record could not be completed', () => {
    expect(
      interruptionNotice('SIGHUP', {
        step: 'recording',
        written: ['src/b.js'],
        unrestored: [],
        recordFailure: 'git cat-file ended.',
      }),
    ).toBe(
      'interrupted (SIGHUP) while the verdict was being recorded, and the record could not be completed (git cat-file ended): the 1 file(s) the worker wrote (src/b.js) were put back as they were, and nothing was recorded. Run the unit again to delegate it anew.',
    );
  });

  it('once the record is complete, and paths shown quoted as the receipt shows them', () => {
    expect(
      interruptionNotice('SIGINT', {
        step: 'recorded',
        verdict: 'UNIT_PASSED',
        written: ['src/a\u200b.js'],
        recorded: true,
      }),
    ).toBe(
      'interrupted (SIGINT) while the verdict was being recorded, so the interrupt waited for the record to be complete: the verdict UNIT_PASSED on the 1 file(s) the worker wrote ("src/a\\342\\200\\213.js") is signed and recorded in refs/notes/delegations, and the files stay as recorded.',
    );
  });
});

describe('signalExitCode', () => {
  it('is 128 + the signal number, as a shell reports it', () => {
    expect(['SIGINT', 'SIGTERM', 'SIGHUP'].map((s) => signalExitCode(s as NodeJS.Signals))).toEqual([
      130, 143, 129,
    ]);
  });
});
