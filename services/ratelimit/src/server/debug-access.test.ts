// The debug server's access rule on exact inputs: the peer rule (DEBUG_ACCESS), the Host rule
// (loopback names, IP addresses, DEBUG_ALLOWED_HOSTS) and the parsing of the allow list.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_DEBUG_ACCESS, OPEN_DEBUG_ACCESS, debugAccessRefusal, hostName, isLoopbackAddress, isLoopbackHost, parseAllowedHosts, type DebugAccessPolicy } from './debug-access.js';

const any = (allowedHosts: string[] = []): DebugAccessPolicy => ({ mode: 'any', allowedHosts });

test('loopback (the default): a peer off loopback is refused whatever Host it names', () => {
  for (const peer of ['10.0.0.7', '::ffff:10.0.0.7', 'fd00::2', '192.0.2.2', undefined]) {
    assert.match(debugAccessRefusal(DEFAULT_DEBUG_ACCESS, peer, '127.0.0.1:6070') ?? '', /DEBUG_ACCESS=loopback/, String(peer));
  }
  for (const peer of ['127.0.0.1', '127.1.2.3', '::1', '::ffff:127.0.0.1']) {
    assert.equal(debugAccessRefusal(DEFAULT_DEBUG_ACCESS, peer, 'localhost:6070'), undefined, peer);
  }
});

test('the Host rule: loopback names and IP addresses pass, other names (DNS rebinding) are refused', () => {
  for (const host of ['localhost', 'localhost:6070', 'LOCALHOST.', 'app.localhost:6070', '127.0.0.1:6070', '[::1]:6070', '10.1.2.3:6070', '[fd00::2]:6070', '192.0.2.2']) {
    assert.equal(debugAccessRefusal(DEFAULT_DEBUG_ACCESS, '127.0.0.1', host), undefined, host);
    assert.equal(debugAccessRefusal(any(), '10.9.9.9', host), undefined, host);
  }
  for (const host of ['evil.example', 'evil.example:6070', 'localhost.evil.example', '127.0.0.1.nip.io', '2130706433', '', '[::1', '::1', 'a:b:c', undefined]) {
    const why = debugAccessRefusal(DEFAULT_DEBUG_ACCESS, '127.0.0.1', host);
    assert.match(why ?? '', /DEBUG_ALLOWED_HOSTS/, String(host));
  }
  // The refusal names the Host it refused, cut short.
  assert.match(debugAccessRefusal(DEFAULT_DEBUG_ACCESS, '127.0.0.1', 'evil.example:6070') ?? '', /Host "evil\.example:6070"/);
  assert.ok((debugAccessRefusal(DEFAULT_DEBUG_ACCESS, '127.0.0.1', 'x'.repeat(5000)) ?? '').length < 400);
});

test('DEBUG_ALLOWED_HOSTS: listed names and *.suffix subdomains pass; * admits any Host', () => {
  const p = any(parseAllowedHosts('ratelimit.internal, *.svc.cluster.local'));
  assert.equal(debugAccessRefusal(p, '10.0.0.1', 'ratelimit.internal:6070'), undefined);
  assert.equal(debugAccessRefusal(p, '10.0.0.1', 'RateLimit.Internal'), undefined);
  assert.equal(debugAccessRefusal(p, '10.0.0.1', 'ratelimit.default.svc.cluster.local:6070'), undefined);
  assert.notEqual(debugAccessRefusal(p, '10.0.0.1', 'svc.cluster.local.evil.example'), undefined);
  assert.notEqual(debugAccessRefusal(p, '10.0.0.1', 'other.internal'), undefined);
  assert.equal(debugAccessRefusal(OPEN_DEBUG_ACCESS, '10.0.0.1', 'anything.example'), undefined);
  assert.equal(debugAccessRefusal(OPEN_DEBUG_ACCESS, '10.0.0.1', undefined), undefined);
  // The peer rule still applies with an open Host rule.
  assert.notEqual(debugAccessRefusal({ mode: 'loopback', allowedHosts: ['*'] }, '10.0.0.1', 'localhost'), undefined);
});

test('DEBUG_ALLOWED_HOSTS parsing refuses ports, schemes and junk with a message', () => {
  assert.deepEqual(parseAllowedHosts(''), []);
  assert.deepEqual(parseAllowedHosts(' A.example. ,*.b.example,*'), ['a.example', '*.b.example', '*']);
  for (const bad of ['a.example:6070', 'http://a.example', 'a b', '*a.example', 'a..example', '-a.example']) {
    assert.throws(() => parseAllowedHosts(bad), /host names without ports/, bad);
  }
});

test('host names and loopback checks', () => {
  assert.equal(hostName('[::1]:6070'), '::1');
  assert.equal(hostName('Example.COM.:80'), 'example.com');
  assert.equal(hostName('[::1]x'), undefined);
  assert.equal(isLoopbackHost('evil.example:6070'), false);
  assert.equal(isLoopbackHost('127.0.0.1:6070'), true);
  assert.equal(isLoopbackHost('localhost'), true);
  assert.equal(isLoopbackHost('[::1]:6070'), true);
  assert.equal(isLoopbackAddress('::ffff:127.0.0.1'), true);
  assert.equal(isLoopbackAddress('10.0.0.1'), false);
  assert.equal(isLoopbackAddress('::ffff:10.0.0.1'), false);
});
