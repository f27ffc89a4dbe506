// A long take-in of a remote ledger says what it is doing on a terminal, and only once it has lasted a moment.
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Io } from '../src/command.js';
import { sayingWhenSlow } from '../src/ledger-intake.js';

function ioOf(interactive: boolean): Io & { said: string[] } {
  const said: string[] = [];
  return {
    said,
    out: () => {},
    err: (text) => said.push(text),
    cwd: '/',
    env: {},
    interactive,
    prompt: async () => '',
  };
}

const later = (ms: number) => new Promise<string>((resolve) => setTimeout(() => resolve('done'), ms));

describe('sayingWhenSlow', () => {
  afterEach(() => vi.useRealTimers());

  it('says it on a terminal once the work has lasted 1.5 s, and gives the work’s answer', async () => {
    vi.useFakeTimers();
    const io = ioOf(true);
    const answer = sayingWhenSlow(io, 'checking...\n', later(5_000));
    await vi.advanceTimersByTimeAsync(5_000);
    expect(await answer).toBe('done');
    expect(io.said).toEqual(['checking...\n']);
  });

  it('control: says nothing for quick work, nor without a terminal', async () => {
    vi.useFakeTimers();
    const quick = ioOf(true);
    const answer = sayingWhenSlow(quick, 'checking...\n', later(100));
    await vi.advanceTimersByTimeAsync(5_000);
    expect(await answer).toBe('done');
    const piped = ioOf(false);
    const slow = sayingWhenSlow(piped, 'checking...\n', later(5_000));
    await vi.advanceTimersByTimeAsync(5_000);
    await slow;
    expect([quick.said, piped.said]).toEqual([[], []]);
  });
});
