// `delegate-git report` end to end with the BUILT CLI: a real repository adopted with `init`, a ledger holding
// verdicts from several delegators, models and days, reviews, a record from another tool and a forged line; the
// text, JSON and HTML accountings of it; and the HTML rendered by a real headless Chromium.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { POLICY_PATH, parsePolicy, Repository, recordStatement } from '../../packages/core/src/index.js';
import {
  reviewStatement,
  type SubjectFile,
  type VerdictName,
  verdictStatement,
} from '../../packages/core/src/statement.js';
import {
  adopt,
  cli,
  cliOk,
  commit,
  gitOk,
  makeStory,
  makeWorkTree,
  type Story,
} from '../support/cli-story.js';
import { keyFilesOf, subjectOf, type TestKey, testKey } from '../support/records.js';

const CHROMIUM = '/usr/bin/chromium';
// In CI (`CI=true`; the test script installs Debian's chromium there) a missing browser fails the run. On a
// developer machine without it the browser check is skipped, and says so, so that the README's test command works
// with only Node, npm and git.
const REQUIRE_BROWSER = process.env.CI === 'true' || process.env.DELEGATE_GIT_REQUIRE_BROWSER === '1';
const SKIP_BROWSER =
  process.env.DELEGATE_GIT_SKIP_BROWSER === '1' || (!REQUIRE_BROWSER && !fs.existsSync(CHROMIUM));
if (SKIP_BROWSER) {
  console.warn(
    `report.test.ts: the headless-browser check of the HTML report is SKIPPED (${CHROMIUM} is missing).`,
  );
}
/** A model name that is markup: the report must show it as text, never as HTML. */
const ODD_MODEL = 'llama "3.1" <b>8b</b>';

const bob = testKey({ name: 'bob', roles: ['delegator'] });
const carol = testKey({ name: 'carol', roles: ['delegator'] });
const rita = testKey({ name: 'rita', roles: ['reviewer'] });
const mallory = testKey({ name: 'mallory', roles: ['delegator', 'reviewer'] });

const files = {
  a1: subjectOf('src/a.ts', 'export const a = 1;\n'),
  a2: subjectOf('src/a.ts', 'export const a = 2;\n'),
  b1: subjectOf('src/b.ts', 'export const b = 1;\n'),
  c1: subjectOf('src/c.ts', 'export const c = 1;\n'),
  c2: subjectOf('src/c.ts', 'export const c = 2;\n'),
  d1: subjectOf('src/d.ts', 'export const d = 1;\n'),
};
const contents: Record<string, string> = {
  [files.a1.gitBlob]: 'export const a = 1;\n',
  [files.a2.gitBlob]: 'export const a = 2;\n',
  [files.b1.gitBlob]: 'export const b = 1;\n',
  [files.c1.gitBlob]: 'export const c = 1;\n',
  [files.c2.gitBlob]: 'export const c = 2;\n',
  [files.d1.gitBlob]: 'export const d = 1;\n',
};

interface Worker {
  model: string;
  promptTokens: number;
  completionTokens: number;
  durationMs: number;
}

let story: Story;
let dir: string;

/**
 * Registers bob, carol and rita in the trust root (committed), then records, through the project's own writer:
 * five delegations over three days and two models (one written by "another tool", without worker fields), three
 * reviews, and one line signed by a key outside the trust root. `init` itself recorded one approval (today).
 */
async function populate(): Promise<void> {
  const policy = parsePolicy(fs.readFileSync(path.join(dir, POLICY_PATH), 'utf8'));
  for (const f of keyFilesOf([bob, carol, rita], policy.keysDir))
    fs.writeFileSync(path.join(dir, f.path), f.text);
  gitOk(story, dir, ['add', policy.keysDir]);
  expect(commit(story, dir, 'Register bob, carol and rita', ['--no-verify']).code).toBe(0);
  // Notes annotate blobs that exist: write each judged content into the object store first.
  for (const [blob, content] of Object.entries(contents)) {
    const written = spawnSync('git', ['hash-object', '-w', '--stdin'], {
      cwd: dir,
      env: story.env,
      input: content,
    });
    expect(written.stdout.toString('utf8').trim()).toBe(blob);
  }
  const repositoryId = policy.repositoryId;
  const verdict = (
    verdictName: VerdictName,
    subjects: SubjectFile[],
    createdAt: string,
    worker?: Worker,
    flaky = false,
  ) =>
    verdictStatement(subjects, {
      verdict: verdictName,
      repository: { id: repositoryId },
      createdAt,
      ...(worker && {
        unit: { name: `unit at ${createdAt}` },
        verification: { runs: [], flaky },
        worker: { endpointHost: '127.0.0.1:1234', ...worker },
      }),
    });
  const review = (key: TestKey, decision: 'approve' | 'reject', subjects: SubjectFile[], createdAt: string) =>
    reviewStatement(subjects, {
      decision,
      reviewer: { name: key.keyFile.name, email: key.keyFile.email },
      repository: { id: repositoryId },
      createdAt,
    });
  const qwen = (promptTokens: number, completionTokens: number, durationMs: number) => ({
    model: 'qwen2.5-coder',
    promptTokens,
    completionTokens,
    durationMs,
  });
  const odd = (promptTokens: number, completionTokens: number, durationMs: number) => ({
    model: ODD_MODEL,
    promptTokens,
    completionTokens,
    durationMs,
  });
  const records: Array<[TestKey, ReturnType<typeof verdict> | ReturnType<typeof review>]> = [
    [bob, verdict('UNIT_PASSED', [files.a1, files.b1], '2026-11-01T09:00:00Z', qwen(1000, 200, 4000))],
    [bob, verdict('UNIT_FAILED', [files.a2], '2026-11-01T10:00:00Z', qwen(1200, 300, 5000))],
    [mallory, verdict('UNIT_PASSED', [files.a2], '2026-11-01T11:00:00Z', qwen(1, 1, 1))],
    [carol, verdict('UNIT_FLAKY', [files.c1], '2026-11-02T10:00:00Z', odd(800, 100, 3000), true)],
    [rita, review(rita, 'approve', [files.b1], '2026-11-02T12:00:00Z')],
    [rita, review(rita, 'reject', [files.c1], '2026-11-02T13:00:00Z')],
    [rita, review(rita, 'approve', [files.a2], '2026-11-03T08:00:00Z')],
    [carol, verdict('UNIT_PASSED', [files.c2], '2026-11-03T10:00:00Z', odd(900, 150, 2000))],
    [bob, verdict('UNIT_PASSED', [files.d1], '2026-11-03T12:00:00Z')],
  ];
  const repo = await Repository.open(dir, story.env);
  try {
    for (const [key, statement] of records)
      await recordStatement(repo.ledger, statement, key.signer, 'test record');
  } finally {
    await repo.close();
  }
}

beforeAll(async () => {
  story = makeStory('delegate-git-report-');
  dir = makeWorkTree(story, 'work');
  adopt(story, dir, ['src/**']);
  await populate();
});

afterAll(() => story?.cleanup());

/** Today's approval by `init` (the trust anchor): its day depends on when the test runs. */
function anchorDay(): string {
  const log = JSON.parse(cliOk(story, dir, ['log', '.delegate-git/policy.json', '--json']).stdout) as {
    records: Array<{ createdAt: string }>;
  };
  return log.records[0]!.createdAt.slice(0, 10);
}

describe('report --json', () => {
  test('every number of the accounting, each record line counted once', () => {
    const run = cliOk(story, dir, ['report', '--json']);
    const report = JSON.parse(run.stdout);
    expect(report.ledgerTip).toBe(gitOk(story, dir, ['rev-parse', 'refs/notes/delegations']));
    expect(report.judgedBy).toBe('the work tree');
    expect(report.lines).toBe(10);
    expect(report.valid).toBe(9);
    expect(report.invalid.total).toBe(1);
    expect(Object.entries(report.invalid.reasons)).toEqual([
      [
        `signed by a key that is not in the trust root (keyid ${mallory.signer.publicKey.keyid.slice(0, 12)})`,
        1,
      ],
    ]);
    expect(report.first).toBe('2026-11-01T09:00:00Z');
    expect(report.delegations).toEqual({ total: 5, passed: 3, flaky: 1, passRate: 0.6, flakyRate: 0.2 });
    expect(report.byVerdict).toEqual({
      UNIT_PASSED: 3,
      UNIT_FAILED: 1,
      UNIT_FLAKY: 1,
      UNIT_UNVERIFIED: 0,
      INCOHERENT: 0,
      CONTRACT_MODIFIED: 0,
      VERIFICATION_NOT_APPROVED: 0,
      CONTEXT_REFUSED: 0,
      WORKER_ERROR: 0,
      NO_CHANGES: 0,
    });
    expect(report.reviews).toEqual({ approve: 3, reject: 1 });
    expect(
      report.byModel.map(
        (m: { model: string; delegations: number; passed: number; flaky: number; tokens: object }) => [
          m.model,
          m.delegations,
          m.passed,
          m.flaky,
          m.tokens,
        ],
      ),
    ).toEqual([
      [
        ODD_MODEL,
        2,
        1,
        1,
        {
          prompt: 1700,
          completion: 250,
          total: 1950,
          workerMs: 5000,
          delegationsWithUsage: 2,
          delegationsEstimated: 0,
        },
      ],
      [
        'qwen2.5-coder',
        2,
        1,
        0,
        {
          prompt: 2200,
          completion: 500,
          total: 2700,
          workerMs: 9000,
          delegationsWithUsage: 2,
          delegationsEstimated: 0,
        },
      ],
      [
        '(unknown)',
        1,
        1,
        0,
        { prompt: 0, completion: 0, total: 0, workerMs: 0, delegationsWithUsage: 0, delegationsEstimated: 0 },
      ],
    ]);
    expect(
      report.bySigner.map(
        (s: {
          signer: string;
          delegations: number;
          passed: number;
          approvals: number;
          rejections: number;
        }) => [s.signer, s.delegations, s.passed, s.approvals, s.rejections],
      ),
    ).toEqual([
      ['bob', 3, 2, 0, 0],
      ['rita', 0, 0, 2, 1],
      ['carol', 2, 1, 0, 0],
      ['alice', 0, 0, 1, 0],
    ]);
    const today = anchorDay();
    expect(report.byDay.map((d: { day: string }) => d.day)).toEqual([
      '2026-11-01',
      '2026-11-02',
      '2026-11-03',
      today,
    ]);
    expect(report.byDay.slice(0, 3)).toEqual([
      {
        day: '2026-11-01',
        delegations: 2,
        passed: 1,
        failed: 1,
        flaky: 0,
        reviews: 0,
        passRate: 0.5,
        flakyRate: 0,
        promptTokens: 2200,
        completionTokens: 500,
        tokens: 2700,
      },
      {
        day: '2026-11-02',
        delegations: 1,
        passed: 0,
        failed: 0,
        flaky: 1,
        reviews: 2,
        passRate: 0,
        flakyRate: 1,
        promptTokens: 800,
        completionTokens: 100,
        tokens: 900,
      },
      {
        day: '2026-11-03',
        delegations: 2,
        passed: 2,
        failed: 0,
        flaky: 0,
        reviews: 1,
        passRate: 1,
        flakyRate: 0,
        promptTokens: 900,
        completionTokens: 150,
        tokens: 1050,
      },
    ]);
    expect(report.byDay[3]).toMatchObject({ delegations: 0, reviews: 1, passRate: null });
    expect(report.tokens).toEqual({
      prompt: 3900,
      completion: 750,
      total: 4650,
      workerMs: 14000,
      delegationsWithUsage: 4,
      delegationsEstimated: 0,
    });
    // a1, c2, d1 by verdict; a2 by review; b1 by both; c1 rejected; init's policy and key file counted apart.
    expect(report.promotions).toEqual({
      total: 6,
      byVerdict: 3,
      byReview: 1,
      byBoth: 1,
      rejected: 1,
      notPromoted: 0,
      governance: 2,
    });
  });

  test('a record of a key removed from the trust root stops counting (control for the counts above)', () => {
    const keyFile = path.join(dir, '.delegate-git/keys/carol.json');
    const saved = fs.readFileSync(keyFile);
    fs.rmSync(keyFile);
    try {
      const report = JSON.parse(cliOk(story, dir, ['report', '--json']).stdout);
      expect(report.valid).toBe(7);
      expect(report.delegations.total).toBe(3);
      expect(report.byModel.map((m: { model: string }) => m.model)).not.toContain(ODD_MODEL);
    } finally {
      fs.writeFileSync(keyFile, saved);
    }
  });
});

describe('report counts file versions as the gates judge them', () => {
  test('under requireReview with a threshold of 2, no verdict and no single approval promotes: the same records count as refused', () => {
    const policyFile = path.join(dir, POLICY_PATH);
    const saved = fs.readFileSync(policyFile, 'utf8');
    fs.writeFileSync(
      policyFile,
      `${JSON.stringify({ ...JSON.parse(saved), requireReview: true, reviewThreshold: 2 }, null, 2)}\n`,
    );
    try {
      const report = JSON.parse(cliOk(story, dir, ['report', '--json']).stdout);
      // The verdicts and the single approvals (b1, a2) promote nothing now; c1 stays rejected. The policy and key
      // file were admitted by the rules in force before them, which a threshold raised since does not undo: counted
      // apart, as verify still promotes them.
      expect(report.promotions).toEqual({
        total: 6,
        byVerdict: 0,
        byReview: 0,
        byBoth: 0,
        rejected: 1,
        notPromoted: 5,
        governance: 2,
      });
      // Drawn in a colour of its own, apart from every colour that promotes (reviewer finding rv07).
      const html = path.join(dir, '..', 'threshold-report.html');
      cliOk(story, dir, ['report', '--html', html]);
      expect(fs.readFileSync(html, 'utf8')).toMatch(
        /<path class="slice unpromoted" d="[^"]+"><title>5 file version\(s\) not promoted/,
      );
      // Control: the delegations themselves are counted as before.
      expect(report.delegations.total).toBe(5);
      expect(cliOk(story, dir, ['report']).stdout).toContain(
        'File versions promoted (as the gates judge them now): 0 by verdict, 0 by review, 0 by both; refused: 1 rejected, 5 otherwise; and 2 version(s) of the policy and key files, each judged by the rules in force before it',
      );
    } finally {
      fs.writeFileSync(policyFile, saved);
    }
  });
});

describe('report (text)', () => {
  test('a readable summary with the same numbers', () => {
    const run = cliOk(story, dir, ['report']);
    expect(run.stderr).toBe('');
    const text = run.stdout;
    expect(text).toContain('10 distinct record line(s): 9 valid, 1 invalid');
    expect(text).toContain('Delegations: 5   passed 3 (60.0%)   flaky 1 (20.0%)');
    expect(text).toMatch(/^ {2}UNIT_PASSED\s+3 {2}█+$/m);
    expect(text).toMatch(/^ {2}qwen2\.5-coder\s+2\s+1\s+50\.0%\s+0\s+2,700\s+9\.0 s$/m);
    expect(text).toMatch(/^ {2}bob\s+3\s+2\s+0\s+0\s+0$/m);
    expect(text).toMatch(/^ {2}2026-11-02\s+1\s+0\s+1\s+0\.0%\s+100\.0%\s+2\s+900$/m);
    expect(text).toContain('Tokens spent locally: 4,650 (3,900 prompt + 750 completion)');
    expect(text).toContain(
      'File versions promoted (as the gates judge them now): 3 by verdict, 1 by review, 1 by both; refused: 1 rejected, 0 otherwise; and 2 version(s) of the policy and key files',
    );
    expect(text).toContain('signed by a key that is not in the trust root');
  });

  test('refuses an unknown option, and a repository without delegate-git, with exit 2 and what to do', () => {
    const unknown = cli(story, dir, ['report', '--pdf']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('delegate-git report --help');
    const bare = makeWorkTree(story, 'not-adopted');
    const refused = cli(story, bare, ['report']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('delegate-git init');
  });
});

describe('an empty ledger', () => {
  test('zeros in JSON, and an HTML report that says there is nothing yet', () => {
    const fresh = makeWorkTree(story, 'fresh');
    cliOk(story, fresh, ['init', '--protect', 'src/**', '--no-hook']);
    gitOk(story, fresh, ['update-ref', '-d', 'refs/notes/delegations']);
    const report = JSON.parse(cliOk(story, fresh, ['report', '--json']).stdout);
    expect(report).toMatchObject({ ledgerTip: null, lines: 0, valid: 0, byModel: [], byDay: [] });
    expect(report.delegations.passRate).toBeNull();
    const file = path.join(fresh, 'empty.html');
    cliOk(story, fresh, ['report', '--html', file]);
    const html = fs.readFileSync(file, 'utf8');
    expect(html).toContain('No delegation has been recorded yet.');
    expect(html).not.toContain('<svg');
  });
});

describe('report --html', () => {
  let out: string;
  let html: string;

  beforeAll(() => {
    out = path.join(story.root, 'reports', 'ledger.html');
    fs.mkdirSync(path.dirname(out), { recursive: true });
    // A report an older release wrote there is replaced (a file of the user's is not: cli-basics.test.ts).
    fs.writeFileSync(
      out,
      '<!doctype html>\n<meta name="generator" content="delegate-git 0.0.1">\nan older report',
    );
    const run = cliOk(story, dir, ['report', '--html', out]);
    expect(run.stderr).toContain(`Wrote the HTML report to ${out}`);
    html = fs.readFileSync(out, 'utf8');
  });

  test('replaces the file atomically, leaving nothing else behind', () => {
    expect(fs.readdirSync(path.dirname(out))).toEqual(['ledger.html']);
    expect(html.startsWith('<!doctype html>')).toBe(true);
  });

  test('is self-contained: no resource reference to fetch, no script', () => {
    expect(html).not.toMatch(/\b(?:src|href|xlink:href|action|poster|srcset)\s*=/i);
    expect(html).not.toMatch(/url\s*\(/i);
    expect(html).not.toMatch(/@import/i);
    expect(html).not.toMatch(/<(?:script|link|iframe|img|object|embed)\b/i);
    // The only URLs allowed are inside text (none is expected here); never in an attribute or style.
    for (const match of html.matchAll(/https?:\/\//g)) {
      const before = html.slice(0, match.index);
      expect(before.lastIndexOf('<') < before.lastIndexOf('>'), 'a URL inside a tag').toBe(true);
    }
  });

  test('escapes what records say', () => {
    expect(html).not.toContain('<b>8b</b>');
    expect(html).toContain('llama &quot;3.1&quot; &lt;b&gt;8b&lt;/b&gt;');
  });

  test.skipIf(SKIP_BROWSER)(
    'renders in headless Chromium: charts with bars, titles, and a screenshot',
    () => {
      if (!fs.existsSync(CHROMIUM)) {
        throw new Error(
          `${CHROMIUM} is missing, so the HTML report cannot be checked in a real browser. Install Debian's chromium ` +
            '(`.ci/ensure-chromium`, or `apt-get install -y chromium`), or set DELEGATE_GIT_SKIP_BROWSER=1 to skip this check.',
        );
      }
      const profile = fs.mkdtempSync(path.join(story.root, 'chromium-'));
      const url = `file://${out}`;
      const chromium = (args: string[]) => {
        const run = spawnSync(
          CHROMIUM,
          [
            '--headless',
            '--no-sandbox',
            '--disable-gpu',
            '--disable-quic',
            '--no-first-run',
            '--disable-background-networking',
            '--disable-component-update',
            '--disable-sync',
            `--user-data-dir=${profile}`,
            ...args,
            url,
          ],
          { env: story.env, timeout: 60_000, maxBuffer: 1 << 26 },
        );
        if (run.error) throw run.error;
        expect(run.status, run.stderr.toString('utf8')).toBe(0);
        return run.stdout.toString('utf8');
      };

      const dom = chromium(['--dump-dom']);
      const chart = (id: string) => {
        const match = new RegExp(`<svg[^>]*\\bid="${id}"[\\s\\S]*?</svg>`).exec(dom);
        expect(match, `chart ${id} in the rendered DOM`).not.toBeNull();
        return match![0];
      };
      /** Heights of the data bars (class "bar ..."; legend keys are not bars) whose class starts with `cls`. */
      const barHeights = (svg: string, cls: string) =>
        [...svg.matchAll(/<rect\b[^>]*>/g)]
          .map((m) => m[0])
          .filter((tag) => tag.includes(`class="${cls}`))
          .map((tag) => Number(/\bheight="([\d.]+)"/.exec(tag)?.[1] ?? 0));
      const verdicts = chart('chart-verdicts');
      expect(verdicts).toContain('Delegations by verdict</title>');
      const heights = barHeights(verdicts, 'bar ');
      expect(heights).toHaveLength(3);
      expect(heights.every((h) => h > 0)).toBe(true);
      // UNIT_PASSED (3) is drawn three times as tall as UNIT_FAILED (1).
      const [passed, , failed] = heights;
      expect(passed! / failed!).toBeCloseTo(3, 5);
      expect(chart('chart-rates').match(/<circle\b[^>]*class="dot pass"/g)).toHaveLength(3);
      expect(chart('chart-rates').match(/<circle\b[^>]*class="dot flaky"/g)).toHaveLength(3);
      // Three models: qwen (passed, failed), the odd one (passed, flaky), unknown (passed).
      expect(barHeights(chart('chart-models'), 'bar ').filter((h) => h > 0)).toHaveLength(5);
      expect(chart('chart-signers')).toContain('rita');
      expect(barHeights(chart('chart-tokens'), 'bar prompt').filter((h) => h > 0)).toHaveLength(3);
      expect(chart('chart-promotions')).toContain('3 by verdict');
      expect(chart('chart-promotions')).toContain('2 version(s) of the policy and key files are left out');
      for (const heading of [
        'Delegations by verdict',
        'Pass and flaky rate over time',
        'Per model',
        'Per signer',
        'Tokens spent locally',
        'Files promoted: by verdict versus by review',
      ]) {
        expect(dom).toContain(`<h2>${heading}</h2>`);
      }
      expect(dom).not.toContain('<b>8b</b>');

      const shot = path.join(profile, 'shot.png');
      chromium([`--screenshot=${shot}`, '--window-size=1200,1600']);
      expect(fs.existsSync(shot)).toBe(true);
      const png = fs.readFileSync(shot);
      expect(png.subarray(1, 4).toString('latin1')).toBe('PNG');
      expect(png.length).toBeGreaterThan(10 * 1024);
    },
  );
});
