import assert from 'node:assert/strict';
import { test } from 'node:test';
import { slugify } from '../src/slugify.js';

test('slugify makes URL-safe slugs', () => {
  assert.equal(slugify('Hello, World!'), 'hello-world');
  assert.equal(slugify('  Crème brûlée  '), 'creme-brulee');
  assert.equal(slugify('a--b__c'), 'a-b-c');
});
