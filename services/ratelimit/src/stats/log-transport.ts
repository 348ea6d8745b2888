// Where stats go when neither push nor pull is on: upstream then logs them; we write each statsd
// line to the logger at debug level, so they cost nothing unless LOG_LEVEL=debug asks for them.
import type { Logger } from '../logger.js';
import type { StatsdTransport } from './statsd-transport.js';

export class LogStatsTransport implements StatsdTransport {
  constructor(private readonly logger: Logger) {}
  write(line: string): void {
    if (this.logger.isLevelEnabled('debug')) this.logger.debug(`stat ${line}`);
  }
  flush(): void {}
  connected(): boolean {
    return true;
  }
  close(): Promise<void> {
    return Promise.resolve();
  }
}
