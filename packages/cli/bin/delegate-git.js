#!/usr/bin/env node
// Starts the bundled CLI (dist/delegate-git.cjs, or first dist/pre-commit-quick.cjs for the pre-commit hook) through
// V8's code cache. Node 20 compiles a program's code again in every process, and for a hook that runs on every commit
// that compiling is a large share of its time. So the first run of each command keeps what V8 compiled, in the
// user's cache directory, and later runs of that command start from it. V8 itself refuses a cache made by another V8
// or under other flags; the file's name carries the bundle's size, mtime and inode because V8 checks no more of the
// source than its length. DELEGATE_GIT_CODE_CACHE=off turns the cache off; an absolute path names the directory to
// keep it in. docs/threat-model.md says why the cache lives with the user and never in a repository.
// This file is CommonJS (bin/package.json says so, beside the package's "type": "module"): an ES module as the entry
// point costs every command about 13 ms more CPU to start in Node 20 (its module loader), measured against this file.
'use strict';
const fs = require('node:fs');
// Module itself, not require('node:module'): that also loads the ES module loader (about 0.5 ms of every command).
const { createRequire } = module.constructor;
const path = require('node:path');
const vm = require('node:vm');

const dist = path.join(__dirname, '..', 'dist');
const argv = process.argv.slice(2);
/** The scripts this run loaded, whose compiled code may be kept at exit. */
const loaded = [];
process.once('exit', () => {
  for (const script of loaded) {
    if (script.marked) fs.rmSync(running(script.cache), { force: true });
    keepCompiledCode(script);
  }
});

run().then((code) => {
  // An output that could not be written may have set 2 already (command.ts): the higher code stands.
  process.exitCode = Math.max(code, Number(process.exitCode ?? 0));
});

/**
 * The pre-commit hook (and pre-merge-commit, the same gate for the commit of a merge) runs on every commit, and
 * most stage nothing governed: its quick answer comes from a small
 * script of its own (dist/pre-commit-quick.cjs), and the whole CLI is loaded only when the full check must run,
 * handed that answer so nothing is asked twice. Any other command loads the CLI.
 */
async function run() {
  if (
    argv.length === 2 &&
    argv[0] === 'hook' &&
    (argv[1] === 'pre-commit' || argv[1] === 'pre-merge-commit')
  ) {
    const quick = await load('pre-commit-quick.cjs', 'hook-pre-commit-quick')
      .quickPreCommit(process.cwd(), process.env)
      .catch(() => undefined); // the full check then asks again, and reports what is wrong
    if (quick?.passes) return 0;
    return load('delegate-git.cjs', 'hook-pre-commit').main(argv, undefined, { quickPreCommit: quick });
  }
  const command = argv[0] === 'hook' ? `hook-${argv[1] ?? ''}` : argv[0];
  // The server hook decodes a push's records once each, in a process of a few hundred milliseconds, while git and the
  // signature checks want the same cores: V8's optimizing compiler, started as early as usual, costs it more than
  // it gains (measured on bench/pre-receive: 396 against 461 ms). Tiering up later still optimizes what a large push
  // runs hot. Set before the bundle is compiled, so its code cache is made and checked under the same flags.
  if (command === 'hook-pre-receive') require('node:v8').setFlagsFromString('--interrupt-budget=1000000');
  return load('delegate-git.cjs', command).main(argv);
}

/** Runs a bundled script of dist through the code cache kept for `command`, and returns its exports. */
function load(name, command) {
  const file = path.join(dist, name);
  // Read and stat through one descriptor: the cache is named by this very file, even if a rebuild replaces it now.
  let source;
  let identity;
  try {
    const fd = fs.openSync(file, 'r');
    identity = fs.fstatSync(fd);
    source = fs.readFileSync(fd, 'utf8');
    fs.closeSync(fd);
  } catch {
    process.stderr.write(
      'delegate-git: the CLI has not been built (packages/cli/dist is missing). Run the install step again ' +
        '(npx pnpm install builds it), or `npx pnpm build`.\n',
    );
    process.exit(2);
  }
  const cache = codeCache(process.env, command, identity);
  // The file starts with how long the run that made it took (8 bytes), then V8's data.
  const stored = cache === null ? undefined : unlessLeftRunning(cache, readPrivate(cache.file));
  const madeInMs = stored && stored.length > 8 ? stored.readDoubleLE(0) : 0;
  const cachedData = stored && stored.length > 8 ? stored.subarray(8) : undefined;
  const script = new vm.Script(`(function (exports, require, module, __filename, __dirname) {${source}\n})`, {
    filename: file,
    cachedData,
    importModuleDynamically: vm.constants?.USE_MAIN_CONTEXT_DEFAULT_LOADER,
  });
  // Date.now(), not performance.now(): the first use of `performance` loads perf_hooks (1-2 ms of every command).
  if (cache !== null)
    loaded.push({ script, cache, cachedData, madeInMs, marked: stored !== undefined, started: Date.now() });
  const module = { exports: {} };
  script.runInThisContext()(module.exports, createRequire(file), module, file, path.dirname(file));
  return module.exports;
}

/**
 * The cache's data, unless a run that used it never reached its end. V8 does not check the data it is given: a damaged
 * file (a disk fault, a write cut short) can crash every later run of the command, or send it into an endless loop,
 * and such a run never gets to replace it. So a run that uses the cache marks it (`<file>.running`) until its exit;
 * a mark left behind (a crash, or an interrupt) makes the next run drop that cache and compile afresh. Two runs of one
 * command at once may drop a sound cache: it is only made again.
 */
function unlessLeftRunning(cache, stored) {
  if (stored === undefined) return undefined;
  try {
    if (fs.existsSync(running(cache))) {
      fs.rmSync(cache.file, { force: true });
      fs.rmSync(running(cache), { force: true });
      return undefined;
    }
    fs.writeFileSync(running(cache), '', { mode: 0o600 });
    return stored;
  } catch {
    return undefined; // nowhere to mark it: compile afresh rather than run unmarked
  }
}

function running(cache) {
  return `${cache.file}.running`;
}

/**
 * At exit the cache can hold every function this run compiled, not only the top level. Made when there was none
 * (or V8 refused it), and again when a run far longer than the one that made it probably reached code that one
 * never did (a hook's full check after a run that took the quick answer). Making it costs a few milliseconds,
 * which a run like the one that made it does not spend again.
 */
function keepCompiledCode({ script, cache, cachedData, madeInMs, started }) {
  const fresh = cachedData === undefined || script.cachedDataRejected;
  const ms = Date.now() - started;
  if (!fresh && ms < Math.max(100, 3 * madeInMs)) return;
  try {
    const data = script.createCachedData();
    if (!fresh && data.length <= cachedData.length * 1.1) return;
    const header = Buffer.alloc(8);
    header.writeDoubleLE(ms);
    writePrivate(cache, Buffer.concat([header, data]));
  } catch {
    // Never let the cache change how the command ends.
  }
}

/**
 * One cache per command (a hook and `verify` run different code), or null when there is nowhere to keep it.
 * `suffix` (the command) ends the file's name, so the caches of older builds of the same command can be removed.
 */
function codeCache(env, command, identity) {
  const dir = codeCacheDir(env);
  if (dir === null || !/^[a-z][a-z-]{0,30}$/.test(command ?? '')) return null;
  const { size, mtimeMs, ino } = identity;
  const build = `${size}-${Math.trunc(mtimeMs)}-${ino}`;
  const suffix = `-${command}.v8`;
  return { file: path.join(dir, `${process.version}-${process.arch}-${build}${suffix}`), suffix };
}

/** DELEGATE_GIT_CODE_CACHE (an absolute directory, or "off"), else the XDG cache directory, else ~/.cache. */
function codeCacheDir(env) {
  const absolute = (p) => (p && path.isAbsolute(p) ? p : null);
  const setting = env.DELEGATE_GIT_CODE_CACHE;
  if (setting) return absolute(setting); // "off", or a relative path: none
  const base = absolute(env.XDG_CACHE_HOME) ?? (absolute(env.HOME) && path.join(env.HOME, '.cache'));
  return base ? path.join(base, 'delegate-git', 'code') : null;
}

/** A cache is code: it is read only from a directory that this user owns and no one else may write to. */
function privateDir(dir) {
  const stat = fs.statSync(dir);
  return (process.getuid === undefined || stat.uid === process.getuid()) && (stat.mode & 0o022) === 0;
}

function readPrivate(file) {
  try {
    return privateDir(path.dirname(file)) ? fs.readFileSync(file) : undefined;
  } catch {
    return undefined;
  }
}

/** Written whole (a temporary file renamed over); the caches of older builds of the same command are removed. */
function writePrivate({ file, suffix }, data) {
  const dir = path.dirname(file);
  try {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    if (!privateDir(dir)) return;
    const tmp = `${file}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, data, { mode: 0o600, flag: 'wx' });
    fs.renameSync(tmp, file);
    for (const name of fs.readdirSync(dir)) {
      if (name.endsWith(suffix) && name !== path.basename(file))
        fs.rmSync(path.join(dir, name), { force: true });
    }
  } catch {
    // No cache this time: the next run compiles as this one did.
  }
}
