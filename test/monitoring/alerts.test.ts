/** The alert rules and the scrape configuration of docs/monitoring.md, checked by Prometheus' own promtool. */
import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/cli.js';
import { promtool } from './helpers.js';

const RULES = join(REPO_ROOT, 'config', 'alerts.yml');

async function monitoringDocBlocks(): Promise<string[]> {
  const monitoring = await readFile(join(REPO_ROOT, 'docs', 'monitoring.md'), 'utf8');
  return [...monitoring.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1]!);
}

describe('alert rules and scrape configuration', () => {
  it('config/alerts.yml passes promtool check rules, and its unit tests (promtool test rules) pass', () => {
    const check = promtool(['check', 'rules', RULES]);
    expect(check.output).toMatch(/SUCCESS: 3 rules found/);
    expect(check.code).toBe(0);
    const test = promtool(['test', 'rules', join(REPO_ROOT, 'test', 'monitoring', 'alerts.rules-test.yml')]);
    expect(test.output).toMatch(/SUCCESS/);
    expect(test.code).toBe(0);
  });

  it("docs/monitoring.md's rules are config/alerts.yml, and its scrape configuration passes promtool check config", async () => {
    const blocks = await monitoringDocBlocks();
    expect(blocks.find((b) => b.includes('groups:'))).toBe(await readFile(RULES, 'utf8'));
    const scrape = blocks.find((b) => b.includes('scrape_configs:'));
    expect(scrape).toBeDefined();
    const dir = await mkdtemp(join(tmpdir(), 'session-etl-promcfg-'));
    try {
      await writeFile(join(dir, 'prometheus.yml'), scrape!);
      await copyFile(RULES, join(dir, 'session-etl-alerts.yml'));
      const r = promtool(['check', 'config', join(dir, 'prometheus.yml')]);
      expect(r.output).toMatch(/SUCCESS: 3 rules found/);
      expect(r.code).toBe(0);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
