// AccountService.authenticate answers at once (no promise) for a token in its cache, remembering
// the hash of each token it found; a change of the store (revocation, plan change, by this process
// or another) must still make it ask the store again, hash remembered or not.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { FakeClock } from '@rls/testkit';
import { AccountService, type Account } from '../../src/accounts/account-service.js';
import { isPromise } from '../../src/maybe-promise.js';
import { parsePlans } from '../../src/accounts/plans.js';
import { MemoryStore } from '../../src/store/memory-store.js';

const PLANS = parsePlans(
  {
    plans: [
      { id: 'startup', name: 'Startup', crypto: true, monthlyRequests: 100, maxCoinsPerRequest: 10, historyDays: 366, ranges: ['1d'], intervals: ['1d'] },
      { id: 'pro', name: 'Pro', crypto: true, monthlyRequests: 1000, maxCoinsPerRequest: 20, historyDays: null, ranges: ['1d'], intervals: ['1d'] },
    ],
  },
  'plans.json',
);

/** The service over a memory store whose change version the test moves (as another process's write would). */
function setup(): { accounts: AccountService; store: MemoryStore; clock: FakeClock; bump: () => void } {
  const store = new MemoryStore();
  const clock = new FakeClock(Date.UTC(2026, 2, 15));
  let version = 1;
  const accounts = new AccountService({ tokens: store.tokens, usage: store.usage, plans: PLANS, clock, random: randomBytes, changeVersion: () => version });
  return { accounts, store, clock, bump: () => void version++ };
}

/**
 * The account `authenticate` gives at once, or undefined when it gave none at once (an invalid
 * token, or a promise: it had to ask the store, whose answer may fill the cache later).
 */
function atOnce(accounts: AccountService, token: string | undefined): Account | undefined {
  const r = accounts.authenticate(token);
  if (isPromise(r)) {
    r.catch(() => undefined);
    return undefined;
  }
  return r;
}

/** The cache asks the store's version at most once a millisecond (performance.now, not the injected clock). */
const pastChangeCheck = (): Promise<void> => sleep(5);

test('a cached token is found without the store, by the same account object, again and again', async () => {
  const { accounts } = setup();
  const { token, record } = await accounts.createToken('a', 'startup');
  assert.equal(atOnce(accounts, token), undefined, 'not cached before the first authentication');
  const account = await accounts.authenticate(token);
  assert.equal(account?.tokenId, record.id);
  for (let i = 0; i < 3; i++) assert.equal(atOnce(accounts, token), account);
  assert.equal(atOnce(accounts, token + 'x'), undefined, 'another token');
  assert.equal(atOnce(accounts, ''), undefined);
  assert.equal(atOnce(accounts, undefined), undefined);
  assert.equal(atOnce(accounts, 'x'.repeat(201)), undefined);
});

test('revoked by another process (store version changes): no longer returned though its hash is remembered', async () => {
  const { accounts, store, clock, bump } = setup();
  const { token, record } = await accounts.createToken('a', 'startup');
  const other = await accounts.createToken('b', 'startup');
  await accounts.authenticate(token);
  await accounts.authenticate(other.token);
  assert.ok(atOnce(accounts, token) !== undefined, 'hash remembered');
  assert.ok(atOnce(accounts, other.token) !== undefined);

  assert.equal(await store.tokens.revoke(record.id, clock.now()), true);
  bump();
  await pastChangeCheck();
  assert.equal(atOnce(accounts, token), undefined, 'revoked token after the version change');
  assert.equal(atOnce(accounts, token), undefined, 'and on the next call');
  assert.equal(await accounts.authenticate(token), undefined);
  assert.equal(atOnce(accounts, token), undefined, 'a failed authentication caches nothing');
  // The untouched token is found again once authenticated against the new version.
  assert.equal(atOnce(accounts, other.token), undefined, 'the whole cache went with the version');
  const again = await accounts.authenticate(other.token);
  assert.equal(atOnce(accounts, other.token), again);
});

test('revoked through this service: missed at once, without waiting for a version check', async () => {
  const { accounts } = setup();
  const { token, record } = await accounts.createToken('a', 'startup');
  await accounts.authenticate(token);
  assert.ok(atOnce(accounts, token) !== undefined);
  assert.equal(await accounts.revoke(record.id), true);
  assert.equal(atOnce(accounts, token), undefined);
  assert.equal(await accounts.authenticate(token), undefined);
  assert.equal(atOnce(accounts, token), undefined);
});

test('plan changed by another process: the old account is not returned; the new one after authentication', async () => {
  const { accounts, store, bump } = setup();
  const { token, record } = await accounts.createToken('a', 'startup');
  const before = await accounts.authenticate(token);
  assert.equal(atOnce(accounts, token)?.plan.id, 'startup');
  assert.equal(await store.tokens.setPlan(record.id, 'pro'), true);
  bump();
  await pastChangeCheck();
  assert.equal(atOnce(accounts, token), undefined);
  const after = await accounts.authenticate(token);
  assert.equal(after?.plan.id, 'pro');
  assert.notEqual(after, before);
  assert.equal(atOnce(accounts, token), after);
});

test('without a change version nothing is cached (every lookup goes to the store)', async () => {
  const store = new MemoryStore();
  const accounts = new AccountService({ tokens: store.tokens, usage: store.usage, plans: PLANS, clock: new FakeClock(), random: randomBytes });
  const { token } = await accounts.createToken('a', 'startup');
  assert.ok((await accounts.authenticate(token)) !== undefined);
  assert.equal(atOnce(accounts, token), undefined);
});

test('tokensVersion moves on this service\'s revocations and plan changes and on the store\'s version; livePlans leaves revoked tokens out', async () => {
  const { accounts, store, clock, bump } = setup();
  const a = await accounts.createToken('a', 'startup');
  const b = await accounts.createToken('b', 'pro');
  const v0 = accounts.tokensVersion();
  assert.equal(typeof v0, 'number');
  await pastChangeCheck();
  assert.equal(accounts.tokensVersion(), v0, 'nothing changed');
  await accounts.setPlan(a.record.id, 'pro');
  const v1 = accounts.tokensVersion();
  assert.notEqual(v1, v0, 'a plan change by this service');
  await store.tokens.revoke(b.record.id, clock.now());
  bump();
  await pastChangeCheck();
  const v2 = accounts.tokensVersion();
  assert.notEqual(v2, v1, 'a change by another process, seen through the store version');
  assert.deepEqual([...(await accounts.livePlans([a.record.id, b.record.id, 'nope']))], [[a.record.id, 'pro']]);
  await accounts.revoke(a.record.id);
  assert.notEqual(accounts.tokensVersion(), v2, 'a revocation by this service');
  assert.equal((await accounts.livePlans([a.record.id])).size, 0);
  const unversioned = new AccountService({ tokens: store.tokens, usage: store.usage, plans: PLANS, clock, random: randomBytes });
  assert.equal(unversioned.tokensVersion(), undefined, 'a store that cannot tell: callers ask every time');
});
