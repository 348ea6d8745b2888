// node's TAP reporter, plus one thing: just before the closing summary (`# tests N` ...), a
// `# failed: <file> > <suite> > <test>` line for every failing test, so a CI log whose tail is all
// that survives still names what failed. The summary itself stays node's, and stays last.
import { tap } from 'node:test/reporters';

/** @param {AsyncIterable<{type: string, data: any}>} source */
async function* withFailureList(source) {
  const failed = [];
  const open = []; // names of the enclosing suites, by nesting level
  let listed = false;
  for await (const event of source) {
    const { type, data } = event;
    if (type === 'test:start') open[data.nesting] = data.name;
    if (type === 'test:fail') {
      const error = data.details?.error;
      // A suite fails when a test inside it does; the test is listed already.
      const ownFailure = error?.failureType !== 'subtestsFailed';
      if (ownFailure) {
        const path = [...open.slice(0, data.nesting), data.name].join(' > ');
        const file = data.file === undefined ? '' : `${data.file.replace(process.cwd() + '/', '')}: `;
        failed.push(`${file}${path}`);
      }
    }
    if (!listed && type === 'test:diagnostic' && data.nesting === 0 && /^tests \d+$/.test(data.message)) {
      listed = true;
      for (const line of failed) yield { type: 'test:diagnostic', data: { nesting: 0, message: `failed: ${line}` } };
    }
    yield event;
  }
}

export default async function* reporter(source) {
  yield* tap(withFailureList(source));
}
