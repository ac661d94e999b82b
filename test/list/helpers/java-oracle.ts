import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Real `java.util.regex`, when a JDK is installed: the reference for what a Java pattern means.
 * Uses the JDK in LIST_JAVA_HOME, else `javac`/`java` on the PATH; null when there is none, or
 * with LIST_JAVA_ORACLE=0.
 */
export interface JavaOracle {
  /** For each [pattern, text]: true/false for `Pattern.matches`, or the syntax error. */
  matches(cases: readonly (readonly [string, string])[]): (boolean | string)[];
  /** Feature release, e.g. 17 or 25. */
  readonly major: number;
  close(): void;
}

const SOURCE = `
import java.util.*; import java.util.regex.*; import java.io.*; import java.nio.charset.StandardCharsets;
public class Oracle { public static void main(String[] a) throws Exception {
  BufferedReader r = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
  PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), false, "UTF-8");
  Base64.Decoder d = Base64.getDecoder(); String line;
  while ((line = r.readLine()) != null) {
    String[] p = line.split(" ", -1);
    try {
      Pattern c = Pattern.compile(new String(d.decode(p[0]), StandardCharsets.UTF_8));
      out.println(c.matcher(new String(d.decode(p[1]), StandardCharsets.UTF_8)).matches() ? "1" : "0");
    } catch (PatternSyntaxException e) { out.println("E " + e.getDescription()); }
  }
  out.flush();
}}`;

export function openJavaOracle(): JavaOracle | null {
  if (process.env['LIST_JAVA_ORACLE'] === '0') return null;
  const home = process.env['LIST_JAVA_HOME'];
  const javac = home ? join(home, 'bin', 'javac') : 'javac';
  const java = home ? join(home, 'bin', 'java') : 'java';
  const probe = spawnSync(javac, ['-version'], { encoding: 'utf8' });
  if (probe.status !== 0) return null;
  const major = Number(/(\d+)/.exec(`${probe.stdout}${probe.stderr}`)?.[1] ?? 0);
  const dir = mkdtempSync(join(tmpdir(), 'list-java-oracle-'));
  writeFileSync(join(dir, 'Oracle.java'), SOURCE);
  execFileSync(javac, ['-d', dir, join(dir, 'Oracle.java')]);
  const b64 = (s: string): string => Buffer.from(s, 'utf8').toString('base64');
  return {
    major,
    matches(cases) {
      const input = cases.map(([p, t]) => `${b64(p)} ${b64(t)}`).join('\n') + '\n';
      const out = execFileSync(java, ['-cp', dir, 'Oracle'], { input, maxBuffer: 64 * 1024 * 1024 }).toString('utf8').split('\n');
      return cases.map((_, i) => (out[i] === '1' ? true : out[i] === '0' ? false : out[i] ?? 'no answer'));
    },
    close() {
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
