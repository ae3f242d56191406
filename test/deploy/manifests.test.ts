import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import type { App } from '../../src/app.js';
import { CONFIG_KEYS, loadConfig } from '../../src/config.js';
import { startTestApp } from '../helpers/app.js';

/**
 * The deployment guide's Compose file and Kubernetes manifests, read from the README, checked against the service
 * itself: settings it knows and loads, probes and health checks on routes that answer, the listeners' ports, and
 * a balancer and selectors that reach every instance.
 */
const README = readFileSync(join(import.meta.dirname, '../../README.md'), 'utf8');
const guide = README.slice(README.indexOf('## Running several instances'), README.indexOf('## Performance'));
const yamlBlocks = [...guide.matchAll(/```yaml\n([\s\S]*?)```/g)].map((m) => m[1]!);

type Doc = Record<string, unknown>;
const compose = parse(
  yamlBlocks.find((block) => block.includes('services:'))!,
  { merge: true },
) as Doc;
const kubernetes = parseAllDocuments(yamlBlocks.find((block) => block.includes('kind: Deployment'))!).map(
  (doc) => doc.toJS() as Doc,
);
const kind = (name: string) => kubernetes.find((doc) => doc.kind === name)!;

/** Compose's `${VAR:?message}` interpolation, with a value an operator would give. */
function interpolate(env: Record<string, string>): Record<string, string> {
  const given: Record<string, string> = {
    KEY_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'),
    ADMIN_PASSWORD: 'a-long-admin-password',
  };
  return Object.fromEntries(
    Object.entries(env).map(([key, value]) => [
      key,
      String(value).replace(/\$\{(\w+):\?[^}]*\}/g, (_, name: string) => given[name] ?? ''),
    ]),
  );
}

let app: App;
beforeAll(async () => {
  app = await startTestApp();
});
afterAll(() => app?.close());

/** A GET on the running service. */
const status = async (path: string) => (await fetch(`${app.url('main')}${path}`)).status;

describe('the Compose file', () => {
  const services = compose.services as Record<string, Doc>;
  const agents = Object.entries(services).filter(([, service]) => String(service.image).startsWith('agent-service'));

  it('runs PostgreSQL, Redis, two instances and a balancer', () => {
    expect(Object.keys(services)).toEqual(expect.arrayContaining(['postgres', 'redis', 'balancer']));
    expect(agents.map(([name]) => name)).toEqual(['agent-a', 'agent-b']);
  });

  it('gives each instance settings the service knows, loads, and that share PostgreSQL and Redis', () => {
    for (const [name, service] of agents) {
      const env = interpolate(service.environment as Record<string, string>);
      expect(
        Object.keys(env).filter((key) => !CONFIG_KEYS.includes(key)),
        name,
      ).toEqual([]);
      const dockerfileEnv = { NODE_ENV: 'production', HOST: '0.0.0.0' };
      const config = loadConfig({ ...dockerfileEnv, ...env });
      expect(config.database.dialect, name).toBe('postgres');
      expect(config.redis?.url, name).toBe('redis://redis:6379');
      // Sessions are shared through Redis, so no sticky balancing is configured or needed.
      expect(config.mcp.sessionMode, name).toBe('stateful');
      expect(config.trustProxy, name).toBe(1);
    }
  });

  it('builds an image that starts the built service on the listeners’ ports', () => {
    const dockerfile = String((services['agent-a']!.build as Doc).dockerfile_inline);
    expect(dockerfile).toContain('CMD ["node", "dist/src/main.js", "serve"]');
    const defaults = loadConfig({}).ports;
    expect(dockerfile).toContain(`EXPOSE ${defaults.main} ${defaults.playground} ${defaults.builder}`);
  });

  it('health-checks each instance on a route that answers', async () => {
    for (const [name, service] of agents) {
      const command = ((service.healthcheck as Doc).test as string[]).join(' ');
      const path = /http:\/\/127\.0\.0\.1:8000(\/[\w/]+)/.exec(command)?.[1];
      expect(path, name).toBe('/health/ready');
      expect(await status(path!)).toBe(200);
    }
  });

  it('balances over every instance on its main port, passing what the service reads from a proxy', () => {
    const nginx = String(((compose.configs as Doc).balancer as Doc).content);
    const upstreams = [...nginx.matchAll(/server ([\w-]+):(\d+);/g)].map((m) => `${m[1]}:${m[2]}`);
    expect(upstreams).toEqual(agents.map(([name]) => `${name}:8000`));
    expect(nginx).toContain('X-Forwarded-For');
    expect(nginx).toContain('Upgrade');
    // Compose interpolates `$name` itself: nginx's variables must be written `$$name`.
    expect(nginx.replaceAll('$$', '')).not.toContain('$');
  });
});

describe('the Kubernetes manifests', () => {
  const deployment = kind('Deployment');
  const pod = ((deployment.spec as Doc).template as Doc).spec as Doc;
  const container = (pod.containers as Doc[])[0]!;
  const ports: Record<string, unknown> = Object.fromEntries(
    (container.ports as Doc[]).map((p) => [String(p.name), p.containerPort]),
  );

  it('runs two replicas, with settings the service knows', () => {
    expect((deployment.spec as Doc).replicas).toBeGreaterThanOrEqual(2);
    const env: Record<string, string> = Object.fromEntries(
      (container.env as Doc[]).map((e) => [String(e.name), String(e.value)]),
    );
    expect(Object.keys(env).filter((key) => !CONFIG_KEYS.includes(key))).toEqual([]);
    expect(loadConfig({ ...env, KEY_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64') }).trustProxy).toBe(1);
    // The database, Redis and the key-encryption key come from the secret the README has you create.
    expect(container.envFrom).toEqual([{ secretRef: { name: 'agent-service' } }]);
  });

  it('exposes the listeners’ ports', () => {
    const defaults = loadConfig({}).ports;
    expect(ports).toEqual({ http: defaults.main, playground: defaults.playground, builder: defaults.builder });
  });

  it('wires each probe to the health route meant for it, and each answers', async () => {
    const probes = { startupProbe: '/health/startup', readinessProbe: '/health/ready', livenessProbe: '/health/live' };
    for (const [probe, path] of Object.entries(probes)) {
      const httpGet = (container[probe] as Doc).httpGet as Doc;
      expect(httpGet, probe).toEqual({ path, port: 'http' });
      expect(await status(path), probe).toBe(200);
    }
  });

  it('asks for resources, and gives shutdown more time than the service takes to drain', () => {
    const resources = container.resources as Doc;
    expect(resources.requests).toMatchObject({
      cpu: expect.any(String) as unknown,
      memory: expect.any(String) as unknown,
    });
    expect((resources.limits as Doc).memory).toEqual(expect.any(String));
    expect(Number(pod.terminationGracePeriodSeconds) * 1000).toBeGreaterThan(loadConfig({}).shutdownTimeoutMs + 5_000);
  });

  it('selects the deployment’s pods from the service and the disruption budget, which keeps one serving', () => {
    const labels = (((deployment.spec as Doc).template as Doc).metadata as Doc).labels as Doc;
    expect((kind('Service').spec as Doc).selector).toEqual(labels);
    const budget = kind('PodDisruptionBudget').spec as Doc;
    expect((budget.selector as Doc).matchLabels).toEqual(labels);
    expect(budget.minAvailable).toBeGreaterThanOrEqual(1);
    const targets = ((kind('Service').spec as Doc).ports as Doc[]).map((p) => p.targetPort);
    expect(targets.every((target) => String(target) in ports)).toBe(true);
  });
});

describe('the README', () => {
  it('documents every setting the service reads', () => {
    expect(CONFIG_KEYS.filter((key) => !README.includes(`\`${key}\``))).toEqual([]);
  });
});
