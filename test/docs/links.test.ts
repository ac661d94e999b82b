/**
 * The documentation holds together: the README stays a guide (≤ 300 lines), and every relative link
 * in README.md, docs/*.md and config/**\/*.md reaches a file of the repository, and its `#fragment` a
 * heading of that file (GitHub's anchors), so a section moved between files cannot leave a dead link.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/cli.js';

/** The markdown files whose links are checked, relative to the repository. */
function documents(): string[] {
  const out = ['README.md'];
  const walk = (dir: string, deep: boolean): void => {
    for (const name of readdirSync(join(REPO_ROOT, dir)).sort()) {
      const rel = join(dir, name);
      if (statSync(join(REPO_ROOT, rel)).isDirectory()) {
        if (deep) walk(rel, deep);
      } else if (name.endsWith('.md')) out.push(rel);
    }
  };
  walk('docs', false);
  walk('config', true);
  return out;
}

/** The text with fenced code blocks blanked (their lines kept, so line numbers stay right). */
function withoutFences(text: string): string[] {
  let inFence = false;
  return text.split('\n').map((line) => {
    if (/^\s*(```|~~~)/.test(line)) {
      inFence = !inFence;
      return '';
    }
    return inFence ? '' : line;
  });
}

/** GitHub's anchor of a heading: lowercase, punctuation other than - and _ dropped, spaces to hyphens. */
function slug(heading: string): string {
  const text = heading.replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1'); // a link's text only
  return text
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\p{M} _-]/gu, '')
    .replace(/ /g, '-');
}

/** Every anchor of a markdown file: its headings' slugs (duplicates get -1, -2, …) and HTML ids. */
function anchors(file: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const line of withoutFences(readFileSync(file, 'utf8'))) {
    const h = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (h) {
      const base = slug(h[1]!);
      const n = seen.get(base) ?? 0;
      seen.set(base, n + 1);
      out.add(n === 0 ? base : `${base}-${n}`);
    }
    for (const m of line.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) out.add(m[1]!);
  }
  return out;
}

interface Link {
  doc: string;
  line: number;
  target: string;
}

/** The relative links of a document (inline code and fenced blocks skipped; web and mail links too). */
function relativeLinks(doc: string): Link[] {
  const out: Link[] = [];
  withoutFences(readFileSync(join(REPO_ROOT, doc), 'utf8')).forEach((raw, i) => {
    const line = raw.replace(/`[^`]*`/g, '``');
    for (const m of line.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
      const target = m[1]!;
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:, …
      out.push({ doc, line: i + 1, target });
    }
  });
  return out;
}

/** Why a link does not resolve, or null when it does. */
function brokenReason(link: Link): string | null {
  const hash = link.target.indexOf('#');
  const path = decodeURI(hash < 0 ? link.target : link.target.slice(0, hash));
  const fragment = hash < 0 ? null : decodeURIComponent(link.target.slice(hash + 1));
  const file = path === '' ? join(REPO_ROOT, link.doc) : join(dirname(join(REPO_ROOT, link.doc)), path);
  if (relative(REPO_ROOT, file).startsWith('..')) return 'points outside the repository';
  if (!existsSync(file)) return `no such file ${relative(REPO_ROOT, file)}`;
  if (fragment === null) return null;
  if (!file.endsWith('.md')) return `a #fragment on ${relative(REPO_ROOT, file)}, which is not markdown`;
  if (!anchors(file).has(fragment)) return `no heading #${fragment} in ${relative(REPO_ROOT, file)}`;
  return null;
}

describe('documentation links', () => {
  it('README.md is a guide of at most 300 lines', () => {
    const lines = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8').replace(/\n$/, '').split('\n').length;
    expect(lines).toBeLessThanOrEqual(300);
  });

  it('the slug rule is GitHub’s', () => {
    expect(slug('When the source is wrong in silence')).toBe('when-the-source-is-wrong-in-silence');
    expect(slug('State snapshot (`<data-dir>/state.json`)')).toBe('state-snapshot-data-dirstatejson');
    expect(slug('Cron: node_exporter’s textfile collector')).toBe('cron-node_exporters-textfile-collector');
    expect(slug('Runs and readers of the DuckDB file')).toBe('runs-and-readers-of-the-duckdb-file');
  });

  it('every relative link in README.md, docs/*.md and config/**/*.md resolves, #fragments to a heading', () => {
    const docs = documents();
    expect(docs).toContain('docs/design.md');
    const links = docs.flatMap(relativeLinks);
    expect(links.length).toBeGreaterThan(50);
    const broken = links.flatMap((l) => {
      const reason = brokenReason(l);
      return reason === null ? [] : [`${l.doc}:${l.line}: (${l.target}) ${reason}`];
    });
    expect(broken).toEqual([]);
  });
});
