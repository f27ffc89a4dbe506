/**
 * What the pre-commit hook has learned about trees, kept between runs so that a commit staging nothing governed is
 * answered without starting git. Two kinds of fact, each true forever once true (trees and commits never change):
 *
 *   d <key> <digest>     the governed entries of a directory (a tree id at a path), under a policy blob and the
 *                        paths recorded at a ledger tip, digest to <digest> (index-trees.ts); <key> hashes those four
 *   c <commit> <tree>    a commit's tree (for commits git has packed)
 *
 * The hook learns the digests of the trees an index will commit, so the next commit finds its HEAD known. The file
 * is searched as text, not parsed (it is read on every commit), and keeps the newest facts only.
 */
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { hexDigestOf } from './object-hash.js';

// 3: a digest also counts excluded names where the policy can make fold twins (index-trees.ts).
const FILE = 'quiet-trees-3';
const KEEP = 4096;

export class QuietTrees {
  private readonly added: string[] = [];

  private constructor(
    private readonly file: string,
    /** The file's text after a newline, so every line starts with one. */
    private readonly text: string,
  ) {}

  static read(cacheDir: string): QuietTrees {
    const file = path.join(cacheDir, FILE);
    let text = '';
    try {
      text = readFileSync(file, 'latin1');
    } catch {
      // Nothing learned yet.
    }
    return new QuietTrees(file, `\n${text}`);
  }

  treeOf(commit: string): string | undefined {
    return this.find(`c ${commit} `);
  }

  digestOf(tree: string, dir: string, policyBlob: string, tip: string | null): string | undefined {
    return this.find(`d ${keyOf(tree, dir, policyBlob, tip)} `);
  }

  learnTree(commit: string, tree: string): void {
    this.learn(`c ${commit} `, tree);
  }

  learnDigest(tree: string, dir: string, policyBlob: string, tip: string | null, digest: string): void {
    this.learn(`d ${keyOf(tree, dir, policyBlob, tip)} `, digest);
  }

  /**
   * Written only when something new was learned (a temporary file renamed over, so a reader sees the old or the new
   * facts); a lost race with another hook only loses facts. Synchronously: node:fs/promises would cost the hook
   * about 2 ms to load, for a write of a few kilobytes.
   */
  save(): void {
    if (this.added.length === 0) return;
    const lines = [...this.text.split('\n').filter(Boolean), ...this.added].slice(-KEEP);
    const tmp = `${this.file}.${process.pid}.tmp`;
    try {
      mkdirSync(path.dirname(this.file), { recursive: true });
      writeFileSync(tmp, `${lines.join('\n')}\n`);
      renameSync(tmp, this.file);
    } catch {
      // A read-only git dir: the facts are learned again next time.
      try {
        rmSync(tmp, { force: true });
      } catch {}
    }
  }

  private find(key: string): string | undefined {
    const at = this.text.indexOf(`\n${key}`);
    if (at >= 0) {
      const start = at + 1 + key.length;
      const end = this.text.indexOf('\n', start);
      return this.text.slice(start, end < 0 ? undefined : end);
    }
    const line = this.added.find((l) => l.startsWith(key));
    return line?.slice(key.length);
  }

  private learn(key: string, value: string): void {
    if (this.find(key) === undefined) this.added.push(key + value);
  }
}

/** DIGEST_RULES names how governed entries are chosen; a digest made under other rules is never taken. */
function keyOf(tree: string, dir: string, policyBlob: string, tip: string | null): string {
  return hexDigestOf('sha1', `${DIGEST_RULES}\0${tree}\0${policyBlob}\0${tip ?? '-'}\0${dir}`);
}

/**
 * 2: globs match names holding a line break; 3: protect globs ignore case; 4: so do the policy and keys paths, and
 * both ignore Unicode normalization (governed-paths.ts); 5: a symbolic link or submodule is governed also where a
 * protect glob reaches beneath it; 6: recorded paths ignore case and Unicode normalization too, and case is folded as
 * Unicode folds it (upper, then lower: `ſ` is `s`); 7: the folded path is composed again (`J̌` is `ǰ`).
 */
const DIGEST_RULES = 7;
