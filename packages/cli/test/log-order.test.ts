// `log`'s order: newest first, and at one instant the record the promotion rule takes as the later one first.
import { describe, expect, it } from 'vitest';
import { type LogEntry, pathFilter, sortNewestFirst } from '../src/commands/log.js';

function entry(createdAt: string | null, outcome: string, envelopeSha256: string): LogEntry {
  return {
    noteBlob: 'b'.repeat(40),
    valid: true,
    notCounted: false,
    reason: 'signature verified',
    signer: 'bob',
    envelopeSha256,
    createdAt,
    kind: outcome.startsWith('review:') ? 'review' : 'verdict',
    outcome,
    subjects: [],
    unit: null,
    model: null,
    reportedModel: null,
  };
}

describe('sortNewestFirst', () => {
  it('puts a rejection before an approval of the same instant, whichever envelope hash sorts first', () => {
    const at = '2026-11-30T10:00:00Z';
    for (const [approveHash, rejectHash] of [
      ['0'.repeat(64), 'f'.repeat(64)],
      ['f'.repeat(64), '0'.repeat(64)],
    ]) {
      const sorted = sortNewestFirst([
        entry(at, 'review:approve', approveHash!),
        entry(at, 'review:reject', rejectHash!),
      ]);
      expect(sorted.map((e) => e.outcome)).toEqual(['review:reject', 'review:approve']);
    }
  });

  it('control: a later approval is newer than an earlier rejection; lines that are no record come last', () => {
    const sorted = sortNewestFirst([
      entry(null, 'UNREADABLE', 'a'.repeat(64)),
      entry('2026-11-30T10:00:00Z', 'review:reject', 'c'.repeat(64)),
      entry('2026-11-30T10:00:01Z', 'review:approve', 'd'.repeat(64)),
    ]);
    expect(sorted.map((e) => e.outcome)).toEqual(['review:approve', 'review:reject', 'UNREADABLE']);
  });
});

describe('pathFilter', () => {
  it('takes a name that merely starts with dots as inside the repository; refuses one outside it', () => {
    expect(pathFilter('/r', '/r', '..weird.ts')).toBe('..weird.ts');
    expect(pathFilter('/r', '/r/src', '../src/a.ts')).toBe('src/a.ts');
    expect(pathFilter('/r', '/r/src', 'lib/')).toBe('src/lib');
    expect(pathFilter('/r', '/r/src', '..')).toBeNull(); // the top level itself: everything
    expect(() => pathFilter('/r', '/r', '../x')).toThrow('../x is outside the repository at /r.');
    expect(pathFilter(null, '/bare.git', 'src/a.ts')).toBe('src/a.ts');
  });
});
