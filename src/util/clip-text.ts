/**
 * Text from outside (a server's error message or body) is clipped before it is recorded or sent:
 * a hostile or broken server's 2 MB error would otherwise be stored whole in the run history,
 * state.json and the log at every failed run, and sent to the webhook.
 */

/** Longest server-supplied error text kept (run history, state.json, logs, notifications). */
export const MAX_ERROR_CHARS = 2_000;

/**
 * `text` cut to about `max` characters, as it is when not longer. The start and the end are kept
 * (an error's end often says what to do: "Lower --min-chunk, …"), the middle replaced by a note
 * saying it was clipped and how long the text was; never cut inside a surrogate pair. Clip after
 * redacting: a secret cut in two is no longer recognised.
 */
export function clipText(text: string, max: number = MAX_ERROR_CHARS): string {
  if (text.length <= max) return text;
  const tail = Math.min(300, Math.floor(max / 4));
  let headEnd = max - tail;
  if (isHighSurrogate(text.charCodeAt(headEnd - 1))) headEnd--;
  let tailStart = text.length - tail;
  if (isHighSurrogate(text.charCodeAt(tailStart - 1))) tailStart++;
  return `${text.slice(0, headEnd)} … [clipped: ${text.length.toLocaleString('en-US')} characters in all] … ${text.slice(tailStart)}`;
}

function isHighSurrogate(c: number): boolean {
  return c >= 0xd800 && c <= 0xdbff;
}
