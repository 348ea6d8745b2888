// Rule directory reading (upstream's FILE provider, with a deterministic order instead of goruntime's random one).
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '@rls/testkit';
import { ConfigError, loadRuleSet, readRuleFiles } from '@rls/engine';

const tmp = tempDir('rules-');
after(() => tmp.cleanup());

describe('readRuleFiles', () => {
  const root = join(tmp.path, 'config');
  mkdirSync(join(root, 'sub', 'deeper'), { recursive: true });
  mkdirSync(join(root, '..2026_01_01'), { recursive: true });
  mkdirSync(join(tmp.path, 'elsewhere'));
  writeFileSync(join(root, 'b.yaml'), 'domain: b\n');
  writeFileSync(join(root, 'a.yml'), 'domain: a\n');
  writeFileSync(join(root, 'sub', 'deeper', 'c.conf'), 'domain: c\n');
  writeFileSync(join(root, '.hidden.yaml'), 'domain: hidden\n');
  writeFileSync(join(root, '..2026_01_01', 'k8s.yaml'), 'domain: k8s\n');
  writeFileSync(join(tmp.path, 'elsewhere', 'linked.yaml'), 'domain: linked\n');
  writeFileSync(join(tmp.path, 'elsewhere', 'in-linked-dir.yaml'), 'domain: nope\n');
  symlinkSync(join(tmp.path, 'elsewhere', 'linked.yaml'), join(root, 'link.yaml'));
  symlinkSync(join(tmp.path, 'elsewhere'), join(root, '..data'));
  symlinkSync(join(tmp.path, 'missing-target'), join(root, 'dangling.yaml'));

  test('recursive, sorted, relative names with /, file links followed, directory links not descended, `..` entries skipped', () => {
    const files = readRuleFiles(root, { ignoreDotfiles: false });
    // `..2026_01_01/` and `..data` are Kubernetes ConfigMap bookkeeping: always skipped (the keys
    // are read through their links), so a ConfigMap volume never loads a domain twice.
    assert.deepEqual(
      files.map((f) => f.name),
      ['.hidden.yaml', 'a.yml', 'b.yaml', 'link.yaml', 'sub/deeper/c.conf'],
    );
    assert.equal(files.find((f) => f.name === 'link.yaml')?.content, 'domain: linked\n');
    assert.deepEqual(loadRuleSet(files, { mergeDomainConfig: false }).domains(), ['a', 'b', 'c', 'hidden', 'linked']);
  });
  test('dotfiles and dot-directories can be ignored', () => {
    assert.deepEqual(
      readRuleFiles(root, { ignoreDotfiles: true }).map((f) => f.name),
      ['a.yml', 'b.yaml', 'link.yaml', 'sub/deeper/c.conf'],
    );
  });
  test('a missing directory is an error naming it', () => {
    const missing = join(tmp.path, 'nope');
    assert.throws(() => readRuleFiles(missing, { ignoreDotfiles: false }), (err: unknown) => {
      assert.ok(err instanceof ConfigError);
      assert.ok(err.message.startsWith(`${missing}: cannot read rule directory`), err.message);
      return true;
    });
  });
});
