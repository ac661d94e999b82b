/**
 * config/kubernetes/cronjob.yaml (issue 18, item 4): every YAML document parsed and its structure
 * checked, the way a user applying it would find out otherwise (a Job that is not Indexed, a shard
 * count that disagrees with the pod count, a mount without a volume, a key in the ConfigMap).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { CONFIG_DEFAULTS } from '../../src/config/defaults.js';
import { GLIBC_SETTINGS } from '../../src/config/memory-budget.js';
import { ConfigSchema } from '../../src/config/schema.js';

const DIR = fileURLToPath(new URL('../../config/kubernetes/', import.meta.url));
const MANIFEST = `${DIR}cronjob.yaml`;
const README = readFileSync(`${DIR}README.md`, 'utf8');
/** The configuration file's rule for account names (docs/accounts.md). */
const ACCOUNT_NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;

type Obj = Record<string, any>;

// Kubernetes reads YAML 1.1 (so `defaultMode: 0400` is octal there): parse the same way.
const parsed = parseAllDocuments(readFileSync(MANIFEST, 'utf8'), { version: '1.1' });
const documents = (Array.isArray(parsed) ? parsed : [parsed]).filter((d) => d.contents !== null);
const objects: Obj[] = documents.map((d) => d.toJS() as Obj);
const byKind = (kind: string): Obj[] => objects.filter((o) => o.kind === kind);
const only = (kind: string): Obj => {
  const found = byKind(kind);
  expect(found, `exactly one ${kind}`).toHaveLength(1);
  return found[0] as Obj;
};

const cronJob = only('CronJob');
const jobSpec: Obj = cronJob.spec.jobTemplate.spec;
const podSpec: Obj = jobSpec.template.spec;
const containers: Obj[] = podSpec.containers;
const container = containers[0] as Obj;
const args: string[] = [...(container.command ?? []), ...(container.args ?? [])];

/** Secrets the README tells the user to create: name → the keys given with --from-file/--from-literal. */
const documentedSecrets = new Map<string, string[]>(
  [...README.matchAll(/kubectl create secret generic (\S+)((?:\s+--from-(?:file|literal)=[^\s=]+=\S+)+)/g)].map((m) => [
    m[1] as string,
    [...(m[2] as string).matchAll(/--from-(?:file|literal)=([^\s=]+)=/g)].map((k) => k[1] as string),
  ]),
);
/** Secrets defined in the manifest itself: name → keys. */
const definedSecrets = new Map<string, string[]>(
  byKind('Secret').map((s) => [s.metadata.name as string, Object.keys({ ...s.data, ...s.stringData })]),
);
const secretKeys = (name: string): string[] | undefined => definedSecrets.get(name) ?? documentedSecrets.get(name);

describe('config/kubernetes/cronjob.yaml', () => {
  it('parses as YAML documents without errors or warnings, each a Kubernetes object', () => {
    for (const d of documents) {
      expect(d.errors.map((e) => e.message)).toEqual([]);
      expect(d.warnings.map((e) => e.message)).toEqual([]);
    }
    expect(objects.map((o) => `${o.apiVersion} ${o.kind}`)).toEqual([
      'v1 ServiceAccount', 'v1 ConfigMap', 'batch/v1 CronJob',
    ]);
    for (const o of objects) expect(o.metadata?.name).toMatch(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
  });

  it('runs an Indexed Job whose pod count is the N of --shard $(JOB_COMPLETION_INDEX)/N', () => {
    expect(jobSpec.completionMode).toBe('Indexed');
    const at = args.indexOf('--shard');
    expect(at, '--shard in the command').toBeGreaterThan(-1);
    const m = /^\$\(JOB_COMPLETION_INDEX\)\/(\d+)$/.exec(args[at + 1] ?? '');
    expect(m, `--shard ${args[at + 1]}`).not.toBeNull();
    const n = Number(m![1]);
    expect(n).toBeGreaterThan(1);
    expect(jobSpec.completions).toBe(n);
    expect(jobSpec.parallelism).toBe(n);
    // The variable is the one Kubernetes sets itself: nothing in the manifest may shadow it.
    expect((container.env ?? []).map((e: Obj) => e.name)).not.toContain('JOB_COMPLETION_INDEX');
    // $(VAR) is expanded by Kubernetes only in command and args, not inside a shell string.
    expect(args.filter((a) => a.includes('JOB_COMPLETION_INDEX'))).toEqual([`$(JOB_COMPLETION_INDEX)/${n}`]);
  });

  it('runs session-etl export on an empty disk with the dataset and the state in a bucket, once at a time, with retries bounded', () => {
    expect(args).toContain('export');
    expect(args[args.indexOf('--data-dir') + 1]).toBe('/data');
    expect(cronJob.spec.concurrencyPolicy).toBe('Forbid');
    expect(cronJob.spec.schedule).toMatch(/^\S+ \S+ \S+ \S+ \S+$/);
    expect(Number.isInteger(jobSpec.backoffLimit) && jobSpec.backoffLimit >= 0).toBe(true);
    expect(podSpec.restartPolicy).toBe('Never');
    // Usage/configuration errors (2) and sign-in needed (4) fail the Job without retries.
    const failOn = (jobSpec.podFailurePolicy?.rules ?? [])
      .filter((r: Obj) => r.action === 'FailJob' && r.onExitCodes?.operator === 'In')
      .flatMap((r: Obj) => r.onExitCodes.values);
    expect(failOn).toEqual(expect.arrayContaining([2, 4]));

    // The data directory: an emptyDir, writable; nothing persistent on the node.
    const dataMount = container.volumeMounts.find((m: Obj) => m.mountPath === '/data');
    const dataVolume = podSpec.volumes.find((v: Obj) => v.name === dataMount?.name);
    expect(dataVolume?.emptyDir).toBeDefined();
    expect(dataMount.readOnly ?? false).toBe(false);
    expect(byKind('PersistentVolumeClaim')).toEqual([]);
    // The dataset and the state in a bucket: format parquet (the state goes with it; format both keeps a
    // DuckDB file on the disk, which an emptyDir would lose).
    const configMap = only('ConfigMap');
    const config = JSON.parse(configMap.data['config.json']) as Obj;
    expect(config.format).toBe('parquet');
    expect(config.parquetUrl).toMatch(/^s3:\/\/[a-z0-9.-]+\/\S+$/);
    // Credentials from the pod's role (IRSA): its service account, annotated with the role.
    const sa = only('ServiceAccount');
    expect(podSpec.serviceAccountName).toBe(sa.metadata.name);
    expect(sa.metadata.annotations?.['eks.amazonaws.com/role-arn']).toMatch(/^arn:aws:iam::\d{12}:role\/\S+$/);
    expect((container.env ?? []).find((e: Obj) => e.name === 'AWS_REGION')?.value).toMatch(/^[a-z]{2}-[a-z]+-\d$/);
  });

  it('runs as non-root on a read-only root file system, with resources set', () => {
    expect(podSpec.securityContext.runAsNonRoot).toBe(true);
    expect(podSpec.securityContext.runAsUser).toBeGreaterThan(0);
    expect(podSpec.automountServiceAccountToken).toBe(false);
    for (const c of containers) {
      expect(c.securityContext.readOnlyRootFilesystem, c.name).toBe(true);
      expect(c.securityContext.allowPrivilegeEscalation, c.name).toBe(false);
      expect(c.securityContext.capabilities?.drop, c.name).toContain('ALL');
      expect(c.resources?.requests?.cpu, c.name).toBeDefined();
      expect(c.resources?.requests?.memory, c.name).toBeDefined();
      expect(c.resources?.limits?.memory, c.name).toBeDefined();
      expect(c.image, c.name).toMatch(/^\S+:\S+$/);
    }
  });

  it('mounts only volumes it defines, uses every volume it defines, and refers only to objects that exist', () => {
    const volumes = new Map<string, Obj>(podSpec.volumes.map((v: Obj) => [v.name, v]));
    expect(volumes.size, 'volume names are unique').toBe(podSpec.volumes.length);
    const mounted = new Set<string>();
    for (const c of containers) {
      const paths = c.volumeMounts.map((m: Obj) => m.mountPath);
      expect(new Set(paths).size, `${c.name}: mount paths are unique`).toBe(paths.length);
      for (const m of c.volumeMounts) {
        expect(volumes.has(m.name), `${c.name} mounts ${m.name}`).toBe(true);
        mounted.add(m.name);
      }
    }
    expect([...volumes.keys()].filter((v) => !mounted.has(v)), 'volumes never mounted').toEqual([]);
    for (const v of volumes.values()) {
      if (v.configMap) expect(byKind('ConfigMap').map((o) => o.metadata.name)).toContain(v.configMap.name);
      if (v.persistentVolumeClaim) expect(byKind('PersistentVolumeClaim').map((o) => o.metadata.name)).toContain(v.persistentVolumeClaim.claimName);
      if (podSpec.serviceAccountName) expect(byKind('ServiceAccount').map((o) => o.metadata.name)).toContain(podSpec.serviceAccountName);
    }
  });

  it('uses only Secrets that the manifest defines or the README tells the user to create, with the keys used', () => {
    const used: Array<{ name: string; key?: string; where: string }> = [];
    for (const v of podSpec.volumes) {
      if (!v.secret) continue;
      used.push({ name: v.secret.secretName, where: `volume ${v.name}` });
      for (const item of v.secret.items ?? []) used.push({ name: v.secret.secretName, key: item.key, where: `volume ${v.name}` });
      // Key files readable by their owner only (the kubelet adds group read for fsGroup).
      expect(v.secret.defaultMode, `volume ${v.name}`).toBe(0o400);
    }
    for (const c of containers) {
      for (const e of c.env ?? []) {
        const ref = e.valueFrom?.secretKeyRef;
        if (ref) used.push({ name: ref.name, key: ref.key, where: `${c.name} env ${e.name}` });
      }
      for (const f of c.envFrom ?? []) if (f.secretRef) used.push({ name: f.secretRef.name, where: `${c.name} envFrom` });
    }
    expect(used.length).toBeGreaterThan(1);
    for (const u of used) {
      const keys = secretKeys(u.name);
      expect(keys, `Secret ${u.name} (${u.where}) is neither in the manifest nor created in README.md`).toBeDefined();
      if (u.key !== undefined) expect(keys, `Secret ${u.name} (${u.where}) has key ${u.key}`).toContain(u.key);
    }
    // No Secret in the manifest carries a value: keys are created out of band.
    for (const s of byKind('Secret')) expect({ ...s.data, ...s.stringData }).toEqual({});
  });

  it('holds a configuration whose accounts name where their keys are, never a key, and the pod provides each', () => {
    const configMap = only('ConfigMap');
    const configAt = args[args.indexOf('--config') + 1] as string;
    const configMount = container.volumeMounts.find((m: Obj) => configAt.startsWith(`${m.mountPath}/`));
    expect(configMount, `a mount holding ${configAt}`).toBeDefined();
    expect(podSpec.volumes.find((v: Obj) => v.name === configMount.name)?.configMap?.name).toBe(configMap.metadata.name);
    const file = configAt.slice(configMount.mountPath.length + 1);
    expect(Object.keys(configMap.data)).toContain(file);

    const config = JSON.parse(configMap.data[file]) as Obj;
    // The file the pod reads is one session-etl accepts (the same schema `--config` checks).
    const checked = ConfigSchema.safeParse({ ...CONFIG_DEFAULTS, ...config });
    expect(checked.success, checked.success ? '' : checked.error.message).toBe(true);
    expect(config).not.toHaveProperty('apiKey');
    expect(config).not.toHaveProperty('apiKeyFile');
    const accounts = Object.entries(config.accounts as Record<string, Obj>);
    expect(accounts.length).toBeGreaterThan(1);
    const env = new Map<string, Obj>((container.env ?? []).map((e: Obj) => [e.name, e]));
    const secretMounts = container.volumeMounts.filter((m: Obj) => podSpec.volumes.find((v: Obj) => v.name === m.name)?.secret);
    let files = 0;
    let vars = 0;
    for (const [name, entry] of accounts) {
      expect(name).toMatch(ACCOUNT_NAME);
      expect(entry, `account ${name}`).not.toHaveProperty('apiKey');
      expect('apiKeyFile' in entry !== 'apiKeyEnv' in entry, `account ${name}: exactly one of apiKeyFile, apiKeyEnv`).toBe(true);
      if (entry.apiKeyFile !== undefined) {
        files++;
        // The file must be a key of a Secret mounted at the file's directory.
        const mount = secretMounts.find((m: Obj) => entry.apiKeyFile.startsWith(`${m.mountPath}/`));
        expect(mount, `account ${name}: ${entry.apiKeyFile} lies in a mounted Secret`).toBeDefined();
        const secret = podSpec.volumes.find((v: Obj) => v.name === mount.name).secret;
        expect(secretKeys(secret.secretName), `account ${name}`).toContain(entry.apiKeyFile.slice(mount.mountPath.length + 1));
      } else {
        vars++;
        expect(entry.apiKeyEnv).toMatch(/^[A-Za-z_][A-Za-z0-9_]*$/);
        expect(env.get(entry.apiKeyEnv)?.valueFrom?.secretKeyRef, `account ${name}: ${entry.apiKeyEnv} is set from a Secret`).toBeDefined();
      }
    }
    // The example shows both ways.
    expect(files).toBeGreaterThan(0);
    expect(vars).toBeGreaterThan(0);
    // No environment variable of the pod holds a literal value that could be a key: literals only for
    // the settings that are not secrets.
    for (const e of env.values()) if (!['AWS_REGION', 'AWS_ENDPOINT_URL_S3', 'SESSION_ETL_S3_PATH_STYLE', ...Object.keys(GLIBC_SETTINGS)].includes(e.name)) expect(e.value, `env ${e.name}`).toBeUndefined();
  });

  it('uses only fields the Kubernetes API knows at the levels it sets (a typo would be ignored or refused)', () => {
    const known: Array<[string, Obj | undefined, string[]]> = [
      ['CronJob.spec', cronJob.spec, ['concurrencyPolicy', 'failedJobsHistoryLimit', 'jobTemplate', 'schedule', 'startingDeadlineSeconds', 'successfulJobsHistoryLimit', 'suspend', 'timeZone']],
      ['Job spec', jobSpec, ['activeDeadlineSeconds', 'backoffLimit', 'backoffLimitPerIndex', 'completionMode', 'completions', 'managedBy', 'manualSelector', 'maxFailedIndexes', 'parallelism', 'podFailurePolicy', 'podReplacementPolicy', 'selector', 'successPolicy', 'suspend', 'template', 'ttlSecondsAfterFinished']],
      ['pod spec', podSpec, ['activeDeadlineSeconds', 'affinity', 'automountServiceAccountToken', 'containers', 'dnsConfig', 'dnsPolicy', 'enableServiceLinks', 'hostname', 'imagePullSecrets', 'initContainers', 'nodeSelector', 'priorityClassName', 'restartPolicy', 'runtimeClassName', 'securityContext', 'serviceAccountName', 'subdomain', 'terminationGracePeriodSeconds', 'tolerations', 'topologySpreadConstraints', 'volumes']],
      ['pod securityContext', podSpec.securityContext, ['appArmorProfile', 'fsGroup', 'fsGroupChangePolicy', 'runAsGroup', 'runAsNonRoot', 'runAsUser', 'seLinuxOptions', 'seccompProfile', 'supplementalGroups', 'supplementalGroupsPolicy', 'sysctls']],
      ['container', container, ['args', 'command', 'env', 'envFrom', 'image', 'imagePullPolicy', 'lifecycle', 'livenessProbe', 'name', 'ports', 'readinessProbe', 'resources', 'securityContext', 'startupProbe', 'terminationMessagePath', 'terminationMessagePolicy', 'volumeMounts', 'workingDir']],
      ['container securityContext', container.securityContext, ['allowPrivilegeEscalation', 'appArmorProfile', 'capabilities', 'privileged', 'procMount', 'readOnlyRootFilesystem', 'runAsGroup', 'runAsNonRoot', 'runAsUser', 'seLinuxOptions', 'seccompProfile']],
    ];
    for (const [where, object, fields] of known) {
      expect(object, where).toBeDefined();
      expect(Object.keys(object as Obj).filter((k) => !fields.includes(k)), `unknown fields in ${where}`).toEqual([]);
    }
  });
});

// The one conditional check: kubectl's client-side dry run needs kubectl and a cluster to answer
// its discovery requests. Without them the step is skipped, and says so.
const kubectl = spawnSync('kubectl', ['get', '--raw', '/version', '--request-timeout=5s'], { encoding: 'utf8', timeout: 20_000 });
const kubectlReady = kubectl.status === 0;
if (!kubectlReady) {
  const why = kubectl.error && (kubectl.error as NodeJS.ErrnoException).code === 'ENOENT' ? 'kubectl is not on the PATH' : 'kubectl found no cluster to ask';
  console.warn(`test/config/kubernetes.test.ts: skipping "kubectl apply --dry-run=client" (${why}); the YAML checks above ran.`);
}

describe('kubectl', () => {
  it.skipIf(!kubectlReady)('accepts the manifest with apply --dry-run=client', () => {
    const r = spawnSync('kubectl', ['apply', '--dry-run=client', '-f', MANIFEST], { encoding: 'utf8', timeout: 60_000 });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/cronjob\.batch\/session-etl-export created \(dry run\)/);
  });
});
