/**
 * The unit of work verify hands a thread: notes packed into one buffer come back as NotesLedger reads them (lines
 * sorted in byte order, unique, blank lines dropped), each line with lineFacts' answer, and the records weighed for
 * the candidates exactly as promotionOf weighs them.
 */
import { describe, expect, it } from 'vitest';
import {
  reviewLine,
  subjectOf,
  TEST_REPOSITORY_ID,
  testKey,
  trustRootOf,
  verdictLine,
} from '../../../test/support/records.js';
import { lineFacts } from '../src/line-check.js';
import { checkNoteBatch, indexNoteBatch, NoteBatchBuilder } from '../src/note-batch.js';
import { parseNote } from '../src/notes-format.js';
import { addLines, recordFacts } from '../src/path-index.js';
import { promotionOf } from '../src/promotion.js';
import { decodeRecord, verifyRecord } from '../src/record.js';

const alice = testKey({ name: 'alice', roles: ['delegator'] });
const rita = testKey({ name: 'rita', roles: ['reviewer'] });
const trustRoot = trustRootOf([alice, rita]);

describe('a batch of notes checked by a thread', () => {
  const a = subjectOf('src/a.ts', 'export const a = 1;\n');
  const b = subjectOf('src/b.ts', 'export const b = 1;\n');
  const passed = verdictLine(alice, [a]);
  const failed = verdictLine(alice, [b], { verdict: 'UNIT_FAILED' });
  const approved = reviewLine(rita, [b], { createdAt: '2026-03-02T00:00:00.000Z' });
  // As a foreign tool might leave them: out of order, repeated, blank lines, non-ASCII beyond the BMP.
  const notes: Array<[string, string]> = [
    [a.gitBlob, `${passed}\n`],
    [b.gitBlob, `${failed}\n\n${approved}\n${failed}\n`],
    [b.gitBlob.replace(/^./, '0'), 'z\u{1F600} line\nz\uFFFF line\n\nnot json\n'],
    [a.gitBlob.replace(/^./, '1'), ''],
  ];

  it('gives each note the lines parseNote gives and each line the facts lineFacts gives', () => {
    const builder = new NoteBatchBuilder();
    for (const [blob, text] of notes) builder.add(blob, Buffer.from(text), null, true);
    const checked = checkNoteBatch(builder.take(7), trustRoot, TEST_REPOSITORY_ID);
    expect(checked.id).toBe(7);
    checked.notes.forEach((note, i) => {
      const [blob, text] = notes[i]!;
      expect(note.lines).toEqual(parseNote(text));
      expect(note.facts).toEqual(
        parseNote(text).map((l) => lineFacts(l, blob, trustRoot, TEST_REPOSITORY_ID)),
      );
      expect(note.promotions).toBeNull();
    });
    // The sorted order is the byte order: the astral character (F0 in UTF-8) after U+FFFF (EF).
    expect(checked.notes[2]!.lines).toEqual(['not json', 'z\uFFFF line', 'z\u{1F600} line']);
  });

  it('read for the path index only, records per path what addLines records, garbage and all', () => {
    const two = verdictLine(alice, [a, { ...b, gitBlob: a.gitBlob }]); // one record, two paths on one blob
    const indexed: Array<[string, string]> = [...notes, [a.gitBlob, `${two}\n${passed}\n`]];
    const builder = new NoteBatchBuilder();
    for (const [blob, text] of indexed) builder.add(blob, Buffer.from(text), null, false);
    const { id, facts } = indexNoteBatch(builder.take(3));
    expect(id).toBe(3);
    const fromFacts: Parameters<typeof addLines>[0] = new Map();
    facts.forEach((lines, i) => {
      recordFacts(fromFacts, indexed[i]![0], lines);
    });
    const fromLines: Parameters<typeof addLines>[0] = new Map();
    for (const [blob, text] of indexed) addLines(fromLines, blob, parseNote(text));
    expect(fromFacts).toEqual(fromLines);
    expect([...fromLines.keys()].sort()).toEqual(['src/a.ts', 'src/b.ts']);
  });

  it("weighs a note's records for its candidates as promotionOf does, and sends the lines back for a refusal", () => {
    const rules = { requireReview: false, reviewThreshold: 1 };
    const strict = { requireReview: true, reviewThreshold: 2 };
    const builder = new NoteBatchBuilder();
    builder.add(a.gitBlob, Buffer.from(`${passed}\n`), [{ candidate: a, rules }], false);
    builder.add(
      b.gitBlob,
      Buffer.from(`${failed}\n${approved}\n`),
      [
        { candidate: b, rules },
        { candidate: b, rules: strict },
      ],
      false,
    );
    const checked = checkNoteBatch(builder.take(1), trustRoot, TEST_REPOSITORY_ID);
    const judged = (lines: string[]) =>
      lines.map((l) => {
        const record = decodeRecord(l);
        if (!record.ok) throw new Error(record.reason);
        return { record: record.record, trust: verifyRecord(record.record, trustRoot, TEST_REPOSITORY_ID) };
      });
    expect(checked.notes[0]).toMatchObject({
      promotions: [promotionOf(a, judged([passed]), rules)],
      lines: null,
    });
    const onB = judged(parseNote(`${failed}\n${approved}\n`));
    expect(promotionOf(b, onB, rules).promoted).toBe(true);
    expect(promotionOf(b, onB, strict).promoted).toBe(false);
    // A refusal is left to the caller (its wording needs the path's history), with the note's lines.
    expect(checked.notes[1]).toMatchObject({
      promotions: [promotionOf(b, onB, rules), null],
      lines: parseNote(`${failed}\n${approved}\n`),
    });
  });
});
