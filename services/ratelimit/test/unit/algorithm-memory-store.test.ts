// The algorithm contract (test/support/algorithm-contract.ts) on the embedded memory store.
import { MemoryStore } from '@rls/engine';
import { runAlgorithmContract } from '../support/algorithm-contract.js';

runAlgorithmContract('memory store', (clock) => {
  const store = new MemoryStore({ clock });
  return Promise.resolve({ store, cleanup: () => store.close() });
});

// A store without the algorithms: the suite checks that their rules are refused when loaded.
runAlgorithmContract(
  'a fixed-window-only store',
  (clock) => {
    const inner = new MemoryStore({ clock });
    const store = { kind: 'fixedonly', increment: inner.increment.bind(inner), get: inner.get.bind(inner), isConnected: () => true, close: () => inner.close() };
    return Promise.resolve({ store, cleanup: () => inner.close() });
  },
  { algorithms: [] },
);
