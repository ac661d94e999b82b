import { describe, expect, it } from 'vitest';
import { reportFailure } from '../../src/cli/report-failure.js';
import { chatText } from '../../src/monitoring/notify.js';
import { clipText, MAX_ERROR_CHARS } from '../../src/util/clip-text.js';
import { oneLine, printableLines } from '../../src/util/terminal-text.js';

describe('clipText', () => {
  it('keeps a text up to the bound as it is', () => {
    const t = 'e'.repeat(MAX_ERROR_CHARS);
    expect(clipText(t)).toBe(t);
  });

  it('keeps the start and the end of a longer one, saying how long it was', () => {
    const t = `start ${'m'.repeat(2_000_000)} end: lower --min-chunk`;
    const c = clipText(t);
    expect(c.length).toBeLessThan(MAX_ERROR_CHARS + 60);
    expect(c.startsWith('start mmm')).toBe(true);
    expect(c.endsWith('mmm end: lower --min-chunk')).toBe(true);
    expect(c).toContain(` … [clipped: ${t.length.toLocaleString('en-US')} characters in all] … `);
  });

  it('never cuts a surrogate pair in two', () => {
    const t = '😀'.repeat(3_000);
    const c = clipText(t, 401);
    expect(c).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/);
  });
});

describe('text from outside on a terminal and in chat', () => {
  const HOSTILE = '\u001b]0;pwned\u0007\u001b[2J\u009b31mred\r\nnext\tcol';

  it('oneLine and printableLines leave no control character', () => {
    expect(oneLine(HOSTILE)).toBe('\ufffd]0;pwned\ufffd\ufffd[2J\ufffd31mred next col');
    expect(printableLines(HOSTILE)).toBe('\ufffd]0;pwned\ufffd\ufffd[2J\ufffd31mred\ufffd\nnext col');
  });

  it('reportFailure prints a cause holding escape sequences without them', () => {
    let out = '';
    const stream = { write: (s: string) => ((out += s), true) } as unknown as NodeJS.WritableStream;
    reportFailure(new Error('the run failed', { cause: new Error(`the server said ${HOSTILE}`) }), stream);
    // eslint-disable-next-line no-control-regex
    expect(out).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
    expect(out).toContain('caused by: the server said \ufffd]0;pwned');
  });

  it('chatText: no markdown link, no mention, no Slack markup', () => {
    expect(chatText('see [here](http://evil.example/) or ![x](http://evil.example/i.png) @channel @Everyone <!here> a&b')).toBe(
      'see [here] (http://evil.example/) or ![x] (http://evil.example/i.png) @\u200bchannel @\u200bEveryone &lt;!here&gt; a&amp;b',
    );
  });
});
