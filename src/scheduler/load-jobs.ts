import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { JobDefinition } from './job.js';

/** The jobs/ directory next to this build (dist/jobs when compiled, jobs/ when run from source). */
export function defaultJobsDir(): string {
  return fileURLToPath(new URL('../../jobs/', import.meta.url));
}

/** Loads every job file (`*.js`, or `*.ts` from source; not `.d.ts`) of a directory. */
export async function loadJobs(dir = defaultJobsDir()): Promise<JobDefinition[]> {
  const files = (await readdir(dir)).filter((f) => /\.(js|ts|mjs)$/.test(f) && !f.endsWith('.d.ts')).sort();
  const jobs: JobDefinition[] = [];
  for (const f of files) {
    const mod = (await import(pathToFileURL(join(dir, f)).href)) as { default?: JobDefinition };
    const job = mod.default;
    if (!job || typeof job.run !== 'function' || typeof job.schedule !== 'function' || !job.name) {
      throw new Error(`job file ${join(dir, f)} does not default-export a job ({ name, description, schedule, run })`);
    }
    jobs.push(job);
  }
  return jobs;
}
