/**
 * `npx delegate-git init` for real: the packed CLI, alone in a fresh repository with no workspace around it, sets
 * up and gates commits.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import {
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { repoRoot } from '../support/paths.js';

const PNPM = ['--yes', 'pnpm@10.34.8'];

describe('the packed CLI in a fresh repository', () => {
  let tmp: string;
  let repo: string;
  let env: NodeJS.ProcessEnv;

  beforeAll(() => {
    tmp = mkdtempSync(path.join(os.tmpdir(), 'dg-pack-'));
    execFileSync('npx', [...PNPM, 'pack', '--pack-destination', tmp], {
      cwd: path.join(repoRoot, 'packages', 'cli'),
      stdio: 'pipe',
    });
    repo = path.join(tmp, 'fresh');
    mkdirSync(repo);
    const tarball = readdirSync(tmp).find((f) => f.endsWith('.tgz'))!;
    copyFileSync(path.join(tmp, tarball), path.join(repo, '..', 'delegate-git.tgz'));
    // As in a user's shell: without the npm_config_* variables the test runner (pnpm) exports, which make npx warn.
    const shellEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k)));
    env = {
      ...shellEnv,
      XDG_CONFIG_HOME: path.join(tmp, 'config'),
      npm_config_cache: path.join(tmp, 'npm-cache'),
      GIT_CONFIG_GLOBAL: path.join(tmp, 'gitconfig'),
      GIT_CONFIG_NOSYSTEM: '1',
      DELEGATE_GIT_SIGNING_KEY: '',
    };
    writeFileSync(
      env.GIT_CONFIG_GLOBAL!,
      '[user]\n\tname = Fresh\n\temail = fresh@example.com\n[init]\n\tdefaultBranch = main\n',
    );
    execFileSync('git', ['init', '-q'], { cwd: repo, env });
  }, 120_000);

  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  it('has no workspace: leftovers and bundles everything it needs', () => {
    const tarball = path.join(tmp, 'delegate-git.tgz');
    const manifest = execFileSync('tar', ['-xOzf', tarball, 'package/package.json'], { encoding: 'utf8' });
    expect(manifest).not.toContain('workspace:');
    expect(JSON.parse(manifest).dependencies ?? {}).toEqual({});
    // Its one install-time dependency: libsodium for verify's bulk signature checks, optional and pinned.
    expect(JSON.parse(manifest).optionalDependencies).toEqual({ 'sodium-native': '5.1.0' });
    const listing = execFileSync('tar', ['-tzf', tarball], { encoding: 'utf8' });
    expect(listing).toContain('package/bin/delegate-git.js');
    // The bin is CommonJS inside a "type": "module" package: its own package.json says so.
    expect(listing).toContain('package/bin/package.json');
    // The hook scripts are inside the bundles (the single-file server build has nothing beside it).
    const bundle = execFileSync('tar', ['-xOzf', tarball, 'package/dist/delegate-git.cjs'], {
      encoding: 'utf8',
      // The bundle is past Node's default 1 MiB of output.
      maxBuffer: 64 << 20,
    });
    expect(bundle).toContain('# delegate-git hook (@HOOK@)');
  });

  it('carries its license and the licenses of every package inlined into its bundles', () => {
    const tarball = path.join(tmp, 'delegate-git.tgz');
    const license = execFileSync('tar', ['-xOzf', tarball, 'package/LICENSE'], { encoding: 'utf8' });
    expect(license).toContain('Apache License');
    const notices = execFileSync('tar', ['-xOzf', tarball, 'package/dist/THIRD-PARTY-NOTICES.txt'], {
      encoding: 'utf8',
    });
    // Each runtime dependency of the workspace packages is inlined, so each must be named with its license text.
    for (const pkg of ['core', 'delegate']) {
      const { dependencies } = JSON.parse(
        readFileSync(path.join(repoRoot, 'packages', pkg, 'package.json'), 'utf8'),
      );
      for (const [name, version] of Object.entries(dependencies as Record<string, string>)) {
        if (String(version).startsWith('workspace:')) continue;
        expect(notices).toContain(`${name} ${version} (`);
      }
    }
    expect(notices).toContain('Copyright (c) 2019 Paul Miller');
    expect(notices).not.toContain('ships no license file');
  });

  it('`npx <tarball> init` sets up the repository and the hook then gates commits', () => {
    const init = spawnSync(
      'npx',
      // By its absolute path: npm reads a relative one from the nearest directory above holding a node_modules or a
      // package.json, which the temporary directory's parents may hold.
      [
        '--yes',
        `--package=file:${path.join(tmp, 'delegate-git.tgz')}`,
        '--',
        'delegate-git',
        'init',
        '--protect',
        'src/**',
        '--key',
        'fresh',
      ],
      {
        cwd: repo,
        env,
        encoding: 'utf8',
      },
    );
    expect(init.stderr).toBe('');
    expect(init.status).toBe(0);
    expect(init.stdout).toContain('installed the pre-commit hook');
    // npm prunes npx's cache: the hook runs a copy in the git directory, and gates after the cache is gone.
    expect(readFileSync(path.join(repo, '.git', 'hooks', 'pre-commit'), 'utf8')).toContain(
      `DELEGATE_GIT_CLI='${path.join(repo, '.git', 'delegate-git', 'cli', 'bin', 'delegate-git.js')}'`,
    );
    rmSync(env.npm_config_cache!, { recursive: true, force: true });

    const git = (...args: string[]) => spawnSync('git', args, { cwd: repo, env, encoding: 'utf8' });
    expect(git('add', '.').status).toBe(0);
    expect(git('commit', '-qm', 'Adopt delegate-git').status).toBe(0); // control: the approved anchor commits

    mkdirSync(path.join(repo, 'src'));
    writeFileSync(path.join(repo, 'src', 'a.js'), 'export const a = 1;\n');
    git('add', 'src/a.js');
    const refused = git('commit', '-qm', 'hand-written, unpromoted');
    expect(refused.status).not.toBe(0);
    expect(refused.stderr).toContain('src/a.js');
    expect(refused.stderr).toContain('no verdict');

    writeFileSync(path.join(repo, 'README.md'), '# not governed\n');
    git('reset', '-q', 'src/a.js');
    git('add', 'README.md');
    expect(git('commit', '-qm', 'docs').status).toBe(0); // control: nothing governed staged
  });
});
