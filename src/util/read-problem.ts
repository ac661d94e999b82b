/** Why a file could not be read, in words ("no such file", not ENOENT); the code itself when it has no words here. */
export function readProblem(err: unknown): string {
  const code = (err as NodeJS.ErrnoException)?.code;
  const words: Record<string, string> = {
    ENOENT: 'no such file',
    EACCES: 'permission denied',
    EPERM: 'permission denied',
    EISDIR: 'it is a directory, not a file',
    ENOTDIR: 'a part of the path is a file, not a directory',
  };
  return code ? (words[code] ?? code) : String((err as Error)?.message ?? err);
}
