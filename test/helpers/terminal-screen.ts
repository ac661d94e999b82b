/**
 * What a terminal shows after receiving some bytes: enough of a VT100 to replay a CLI's output
 * (carriage return, newline, erase in line, cursor column and relative moves, save/restore cursor;
 * colours and modes ignored). The screen has no height limit and does not wrap: lines are as long
 * as what was written on them.
 */
export function renderScreen(bytes: string): string[] {
  const lines: string[][] = [[]];
  let row = 0;
  let col = 0;
  let saved = { row: 0, col: 0 };
  const line = () => (lines[row] ??= []);
  const put = (ch: string) => {
    const l = line();
    while (l.length < col) l.push(' ');
    l[col++] = ch;
  };
  for (let i = 0; i < bytes.length; i++) {
    const ch = bytes[i]!;
    if (ch === '\r') col = 0;
    else if (ch === '\n') {
      row++;
      line();
    } else if (ch === '\b') col = Math.max(0, col - 1);
    else if (ch === '\x1b') {
      const next = bytes[i + 1];
      if (next === '7') {
        saved = { row, col };
        i++;
      } else if (next === '8') {
        ({ row, col } = saved);
        line();
        i++;
      } else if (next === '[') {
        const m = /^\[([?]?)([\d;]*)([A-Za-z])/.exec(bytes.slice(i + 1));
        if (!m) continue;
        i += m[0].length;
        if (m[1] === '?') continue; // cursor visibility, line wrapping
        const n = m[2] === '' ? undefined : Number(m[2]!.split(';')[0]);
        const l = line();
        switch (m[3]) {
          case 'K':
            if (!n) l.length = Math.min(l.length, col);
            else if (n === 1) for (let c = 0; c <= col && c < l.length; c++) l[c] = ' ';
            else l.length = 0;
            break;
          case 'G':
            col = (n ?? 1) - 1;
            break;
          case 'A':
            row = Math.max(0, row - (n ?? 1));
            line();
            break;
          case 'B':
            row += n ?? 1;
            line();
            break;
          case 'C':
            col += n ?? 1;
            break;
          case 'D':
            col = Math.max(0, col - (n ?? 1));
            break;
          default: // colours (m) and anything else: no effect on the text
        }
      }
    } else if (ch >= ' ') put(ch);
  }
  return lines.map((l) => l.join('').trimEnd());
}
