import { describe, expect, it } from 'vitest';
import { type JournalWriter, LONGEST_RUN_MS, type ProcessSeen, writerState } from '../src/journal-writer.js';

const HOUR = 3_600_000;
const MADE = Date.parse('2026-12-03T00:00:00.000Z');
const MONO = 5_000n * 1_000_000_000n;

function writer(overrides: Partial<JournalWriter> = {}): JournalWriter {
  return { pid: 4242, boot: 'boot-1', starttime: '1000', monotonic: MONO, made: MADE, ...overrides };
}

/** The process with the pid now, `afterMs` after the journal was made (both clocks). */
function seen(afterMs: number, overrides: Partial<ProcessSeen> = {}): ProcessSeen {
  return {
    boot: 'boot-1',
    alive: true,
    starttime: '1000',
    monotonic: MONO + BigInt(afterMs) * 1_000_000n,
    wall: MADE + afterMs,
    ...overrides,
  };
}

describe('writerState: a journal is replayed only once its run is over, and a pid held by another process is told apart', () => {
  it('the process that made it, still at work, is left alone however long it runs', () => {
    expect(writerState(writer(), seen(1000))).toEqual({ state: 'running' });
    expect(writerState(writer(), seen(10 * LONGEST_RUN_MS))).toEqual({ state: 'running' });
  });

  it('gone, another boot, or a zombie: the run is over', () => {
    expect(writerState(writer(), seen(1000, { alive: false }))).toEqual({ state: 'gone' });
    expect(writerState(writer(), seen(1000, { boot: 'boot-2' }))).toEqual({ state: 'gone' });
  });

  it('a live process with the pid that started at another time is not the run: the run is over', () => {
    expect(writerState(writer(), seen(1000, { starttime: '2000' }))).toEqual({ state: 'gone' });
  });

  it('no start time to compare (an earlier version, or /proc unreadable): waited for, then named after a run could last, never "gone"', () => {
    for (const [w, s] of [
      [writer({ starttime: null }), {}],
      [writer(), { starttime: null }],
    ] as const) {
      expect(writerState(w, seen(HOUR, s))).toEqual({ state: 'running' });
      expect(writerState(w, seen(LONGEST_RUN_MS + HOUR, s))).toEqual({
        state: 'unsure',
        forMs: LONGEST_RUN_MS + HOUR,
      });
    }
  });

  it('within a boot, the monotonic clock decides how long ago, whatever the wall clock says', () => {
    const w = writer({ starttime: null });
    // The wall clock was set forward by days: still a short while by the monotonic clock.
    expect(writerState(w, { ...seen(HOUR), wall: MADE + 10 * LONGEST_RUN_MS })).toEqual({ state: 'running' });
    // Without a boot id the monotonic clock is not known to be this boot's: the wall clock it is.
    const noBoot = writer({ starttime: null, boot: null });
    expect(writerState(noBoot, { ...seen(HOUR, { boot: null }), wall: MADE + 2 * LONGEST_RUN_MS })).toEqual({
      state: 'unsure',
      forMs: 2 * LONGEST_RUN_MS,
    });
    // A version 1 journal (no monotonic clock): the wall clock.
    expect(writerState(writer({ starttime: null, monotonic: null }), seen(2 * LONGEST_RUN_MS))).toMatchObject(
      {
        state: 'unsure',
      },
    );
  });

  it('a journal nothing dates stays waited for', () => {
    expect(
      writerState(writer({ starttime: null, monotonic: null, made: null }), seen(10 * LONGEST_RUN_MS)),
    ).toEqual({ state: 'running' });
  });
});
