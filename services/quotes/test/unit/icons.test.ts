// /icons/<name>.svg is public: the names a client asks for must not grow the server's memory.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { IconStore } from '../../src/api/icons.js';
import { iconsDirectory } from '../../src/market/coin-catalog.js';

test('IconStore keeps only icons the package ships, whatever names are asked; unknown names get the drawn fallback', () => {
  const icons = new IconStore(iconsDirectory());
  for (let i = 0; i < 20_000; i++) {
    const got = icons.get(`zz${i.toString(36)}`);
    assert.equal(got?.found, false);
  }
  assert.equal(icons.size, 0, 'no fallback kept');
  const btc = icons.get('BTC');
  assert.equal(btc?.found, true);
  assert.match(btc.svg.toString('utf8'), /^<svg/);
  assert.equal(icons.get('btc')?.svg, btc.svg, 'read once, then served from memory');
  assert.equal(icons.size, 1);
  const fallback = icons.get('nope1')?.svg.toString('utf8') ?? '';
  assert.match(fallback, /^<svg[^>]*>.*<rect /, 'the fallback is a generated pattern');
  assert.equal(icons.get('NOPE1')?.svg.toString('utf8'), fallback, 'the same name always gets the same fallback');
  assert.notEqual(icons.get('nope2')?.svg.toString('utf8'), fallback, 'another name gets another fallback');
  assert.equal(icons.get('../etc/passwd'), undefined, 'not a symbol');
  assert.equal(icons.get('x'.repeat(21)), undefined);
});
