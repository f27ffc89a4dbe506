import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadSettings, withSetting } from '../src/operator-config.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'operator-config-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
const file = path.join(dir, 'config.json');
fs.writeFileSync(file, `${JSON.stringify({ worker: { endpoint: 'http://127.0.0.1:1234/v1' } })}\n`);

// Assembled at runtime so no credential-shaped literal sits in the repository.
const secret = ['S3cret', 'Pw'].join('');
const withPassword = `http://u:${secret}@127.0.0.1:9999/v1`;

describe('loadSettings: DELEGATE_GIT_WORKER_ENDPOINT', () => {
  it('refuses an endpoint holding a password, as worker.endpoint in the file is refused, without printing it (rt53 f06)', () => {
    const env = { DELEGATE_GIT_WORKER_ENDPOINT: withPassword };
    expect(() => loadSettings(file, env)).toThrow(
      'DELEGATE_GIT_WORKER_ENDPOINT ("http://u:***@127.0.0.1:9999/v1") must not hold a password (user:password@): put the secret in an environment variable and name it with worker.apiKeyEnv. Fix or unset it.',
    );
    try {
      loadSettings(file, env);
    } catch (error) {
      expect((error as { code: string }).code).toBe('CONFIG');
      expect((error as Error).message).not.toContain(secret);
    }
    // The same reason the file's rule gives.
    expect(() => withSetting({}, 'worker.endpoint', withPassword, file)).toThrow(
      'worker.endpoint: must not hold a password (user:password@)',
    );
  });

  it('control: an endpoint without a password, or with a user name alone, overrides the file', () => {
    for (const endpoint of ['http://127.0.0.1:9999/v1', 'https://u@worker.example.com/v1'])
      expect(loadSettings(file, { DELEGATE_GIT_WORKER_ENDPOINT: endpoint }).worker.endpoint).toBe(endpoint);
    expect(loadSettings(file, {}).worker.endpoint).toBe('http://127.0.0.1:1234/v1');
  });
});

describe('loadSettings: a settings file that cannot be read', () => {
  it('is refused, naming it, where the defaults would have run without a word (fc audit f04); control: none there gives the defaults', () => {
    const asDirectory = path.join(dir, 'as-directory', 'config.json');
    fs.mkdirSync(asDirectory, { recursive: true });
    expect(() => loadSettings(asDirectory, {})).toThrow(
      `The operator settings ${asDirectory} cannot be read (EISDIR`,
    );
    const parentIsFile = path.join(dir, 'parent-file');
    fs.writeFileSync(parentIsFile, 'not a directory\n');
    expect(() => loadSettings(path.join(parentIsFile, 'config.json'), {})).toThrow(
      `(it must be a directory you can read)`,
    );
    const none = loadSettings(path.join(dir, 'absent', 'config.json'), {});
    expect(none.worker.endpoint).toBe('http://127.0.0.1:1234/v1');
    expect(none.verification.approval).toBe('ask');
  });
});
