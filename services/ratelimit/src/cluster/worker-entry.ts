// What a forked worker runs: the same `run()`, which sees it is a cluster worker.
import { run } from '../main.js';

await run();
