/**
 * The deployment files can't run here (no Docker daemon, no cluster), so they are read and checked
 * for what matters: Vercel's cron calls the tick; the image packs the package and installs the
 * tarball into a fresh app (as test/package/consumer.test.ts does, where it runs) with the
 * clients everything it runs imports; Compose and Kubernetes run the roles they say, probe
 * /ready and /health, tick on 2 replicas, and configure every variable tickwork reads.
 */
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseYamlDocuments } from "./yaml-subset.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const read = (path: string) => readFileSync(join(ROOT, path), "utf8");
// biome-ignore lint/suspicious/noExplicitAny: manifests are inspected freely
type Doc = any;

/** Every variable the Node server reads, as the configuration files must offer it. */
/**
 * Every variable the Node server reads (src/adapter/node/env.ts and placement-env.ts), but
 * Vercel's `KV_REST_API_*` names for Upstash: found in the code, so a new one fails the checks
 * below until the manifests carry it.
 */
const VARIABLES = [
  ...new Set(
    ["src/adapter/node/env.ts", "src/adapter/node/placement-env.ts"].flatMap((file) =>
      [...read(file).matchAll(/(?:value\(env, |read\()"([A-Z][A-Z0-9_]+)"/g)].map((m) => m[1]!),
    ),
  ),
].filter((name) => !name.startsWith("KV_REST_API_"));

describe("infra/vercel.json", () => {
  it("has Vercel Cron call GET /v1/tick every minute", () => {
    const config = JSON.parse(read("infra/vercel.json"));
    expect(config.crons).toEqual([{ path: "/v1/tick", schedule: "* * * * *" }]);
  });
});

describe("Dockerfile", () => {
  const dockerfile = read("Dockerfile");
  const image = JSON.parse(read("infra/docker/package.json"));

  it("packs the package, installs the tarball into a fresh app and runs `tickwork start` as a non-root user", () => {
    expect(dockerfile).toMatch(/^FROM node:20-slim AS package$/m);
    expect(dockerfile).toMatch(/^RUN npm run build && npm pack --ignore-scripts\b/m);
    expect(dockerfile).toMatch(/^FROM node:20-slim$/m);
    expect(dockerfile).toMatch(/^RUN npm install --omit=dev\b/m);
    expect(image.dependencies.tickwork).toBe("file:/pack/tickwork.tgz");
    expect(dockerfile).toMatch(/^USER node$/m);
    expect(dockerfile).toContain('ENTRYPOINT ["node", "node_modules/tickwork/bin/tickwork.js"]');
    expect(dockerfile).toContain('CMD ["start"]');
    expect(dockerfile).toMatch(/^HEALTHCHECK [\s\S]*?\/health/m);
    // The example handlers land where `tickwork start` finds a handlers module by convention.
    expect(dockerfile).toContain("COPY functions/handlers.ts ./src/tickwork/handlers.ts");
    const ignored = read(".dockerignore").split("\n");
    for (const [, args] of dockerfile.matchAll(/^COPY (?!--from)(.+)$/gm)) {
      const sources = (args as string).split(/\s+/).slice(0, -1);
      for (const path of sources) {
        expect(existsSync(join(ROOT, path)), path).toBe(true);
        expect(ignored, `${path} is copied but .dockerignore leaves it out`).not.toContain(
          path.split("/")[0],
        );
      }
    }
  });

  it("the image's app pins the clients at the versions this repository tests", () => {
    const lock = JSON.parse(read("package-lock.json"));
    for (const [name, version] of Object.entries(image.dependencies as Record<string, string>)) {
      if (name === "tickwork") continue;
      expect(version, name).toBe(lock.packages[`node_modules/${name}`].version);
    }
  });

  it("everything the image runs imports only packages the image installs", () => {
    const pkg = JSON.parse(read("package.json"));
    const installed = new Set([
      ...Object.keys(pkg.dependencies),
      ...Object.keys(image.dependencies),
    ]);
    const files = [
      "bin/tickwork.js",
      "functions/handlers.ts",
      ...walk("src").filter(
        (file) =>
          !file.endsWith(".test.ts") &&
          !/^src\/adapter\/(cloudflare|vercel)\//.test(file) &&
          // Templates of files `tickwork init` writes into a user's project.
          !file.startsWith("src/cli/templates"),
      ),
    ];
    const used = new Set<string>();
    for (const file of files) {
      const code = read(file).replace(/^import type .*$/gm, "");
      for (const [, specifier] of code.matchAll(/(?<![\w"'`])(?:from|import)\s*\(?\s*"([^"]+)"/g)) {
        if (!specifier || /^(\.|node:|tickwork($|\/))/.test(specifier)) continue;
        const name = specifier.startsWith("@")
          ? specifier.split("/").slice(0, 2).join("/")
          : (specifier.split("/")[0] as string);
        used.add(name);
        expect(installed.has(name), `${file} imports ${specifier}, which the image lacks`).toBe(
          true,
        );
      }
    }
    for (const name of ["ioredis", "@upstash/redis", "@upstash/qstash", "hono", "zod"]) {
      expect(used.has(name), name).toBe(true);
    }
  });

  it(".dockerignore keeps tests, node_modules and the repository out of the image", () => {
    const ignored = read(".dockerignore").split("\n");
    for (const entry of ["node_modules", ".git", "test", "**/*.test.ts", "dist", "bench"]) {
      expect(ignored).toContain(entry);
    }
  });
});

describe("infra/docker-compose.yml", () => {
  const [compose] = parseYamlDocuments(read("infra/docker-compose.yml")) as Doc[];
  const { redis, api, tick } = compose.services;

  it("runs Redis, an api+worker server and two tick servers from the repository's Dockerfile", () => {
    expect(redis.image).toMatch(/^redis:/);
    for (const service of [api, tick]) {
      expect(service.build).toEqual({ context: "..", dockerfile: "Dockerfile" });
      expect(service.environment.REDIS_URL).toBe("redis://redis:6379");
      expect(service.depends_on.redis).toEqual({ condition: "service_healthy" });
    }
    expect(api.command).toEqual(["start", "--role", "api,worker"]);
    expect(api.ports).toEqual(["8787:8787"]);
    expect(tick.command).toEqual(["start", "--role", "tick"]);
    expect(tick.deploy.replicas).toBe(2);
    // The local queue's deliveries go from the tick servers to the api service, signed alike.
    expect(tick.environment.TICKWORK_PUBLIC_URL).toBe(api.environment.TICKWORK_PUBLIC_URL);
    expect(tick.environment.TICKWORK_PUBLIC_URL).toContain("http://api:8787");
    expect(tick.environment.TICKWORK_SIGNING_KEY).toBe(api.environment.TICKWORK_SIGNING_KEY);
  });

  it("passes every variable through, and documents each at the top", () => {
    const header = read("infra/docker-compose.yml").split("\nname:")[0] as string;
    for (const name of VARIABLES.filter((v) => !["PORT", "HOST"].includes(v))) {
      if (name.startsWith("UPSTASH_")) continue; // Compose brings its own Redis.
      expect(Object.keys(api.environment), name).toContain(name);
      expect(header, name).toContain(name);
    }
  });
});

describe("infra/k8s", () => {
  const files = readdirSync(join(ROOT, "infra/k8s")).filter((f) => f.endsWith(".yaml"));
  const docs: Doc[] = files
    .filter((f) => f !== "kustomization.yaml")
    .flatMap((f) => parseYamlDocuments(read(`infra/k8s/${f}`)) as Doc[]);
  const find = (kind: string, name: string) => {
    const doc = docs.find((d) => d.kind === kind && d.metadata.name === name);
    expect(doc, `${kind}/${name}`).toBeDefined();
    return doc;
  };
  const container = (deployment: Doc) => deployment.spec.template.spec.containers[0];

  it("every document is a named Kubernetes object; kustomization lists every file", () => {
    for (const doc of docs) {
      expect(doc.apiVersion).toEqual(expect.any(String));
      expect(doc.kind).toEqual(expect.any(String));
      expect(doc.metadata.name).toMatch(/^[a-z0-9-]+$/);
    }
    const [kustomization] = parseYamlDocuments(read("infra/k8s/kustomization.yaml")) as Doc[];
    expect([...kustomization.resources].sort()).toEqual(
      files.filter((f) => f !== "kustomization.yaml").sort(),
    );
  });

  it("api-worker: roles api,worker, ready on /ready, alive on /health, behind a Service", () => {
    const deployment = find("Deployment", "tickwork-api");
    const c = container(deployment);
    expect(c.args).toEqual(["start", "--role", "api,worker"]);
    expect(c.readinessProbe.httpGet).toEqual({ path: "/ready", port: "http" });
    expect(c.livenessProbe.httpGet).toEqual({ path: "/health", port: "http" });
    expect(c.ports).toEqual([{ name: "http", containerPort: 8787 }]);
    expect(deployment.spec.selector.matchLabels).toEqual(deployment.spec.template.metadata.labels);

    const service = find("Service", "tickwork-api");
    expect(service.spec.selector).toEqual(deployment.spec.template.metadata.labels);
    expect(service.spec.ports).toEqual([{ name: "http", port: 8787, targetPort: "http" }]);
    // The local queue delivers through this Service.
    expect(find("ConfigMap", "tickwork-config").data.TICKWORK_PUBLIC_URL).toBe(
      "http://tickwork-api:8787",
    );
  });

  it("api-worker scales on CPU (so its pods request CPU)", () => {
    const hpa = find("HorizontalPodAutoscaler", "tickwork-api");
    expect(hpa.apiVersion).toBe("autoscaling/v2");
    expect(hpa.spec.scaleTargetRef).toEqual({
      apiVersion: "apps/v1",
      kind: "Deployment",
      name: "tickwork-api",
    });
    expect(hpa.spec.minReplicas).toBeGreaterThanOrEqual(2);
    expect(hpa.spec.maxReplicas).toBeGreaterThan(hpa.spec.minReplicas);
    expect(hpa.spec.metrics).toEqual([
      {
        type: "Resource",
        resource: { name: "cpu", target: { type: "Utilization", averageUtilization: 70 } },
      },
    ]);
    expect(container(find("Deployment", "tickwork-api")).resources.requests.cpu).toBeDefined();
  });

  it("tick: 2 replicas of role tick, relying on the lease, with the same probes", () => {
    const deployment = find("Deployment", "tickwork-tick");
    expect(deployment.spec.replicas).toBe(2);
    const c = container(deployment);
    expect(c.args).toEqual(["start", "--role", "tick"]);
    expect(c.readinessProbe.httpGet.path).toBe("/ready");
    expect(c.livenessProbe.httpGet.path).toBe("/health");
    expect(deployment.spec.selector.matchLabels).toEqual(deployment.spec.template.metadata.labels);
    expect(find("PodDisruptionBudget", "tickwork-tick").spec.minAvailable).toBe(1);
  });

  it("every Deployment reads the ConfigMap and Secret, which hold every variable as a string", () => {
    const config = find("ConfigMap", "tickwork-config");
    const secret = find("Secret", "tickwork-secrets");
    const all = { ...config.data, ...secret.stringData };
    expect(Object.keys(all).sort()).toEqual([...VARIABLES].sort());
    for (const [name, value] of Object.entries(all)) expect(typeof value, name).toBe("string");
    expect(config.data.PORT).toBe("8787");
    for (const name of ["tickwork-api", "tickwork-tick"]) {
      expect(container(find("Deployment", name)).envFrom).toEqual([
        { configMapRef: { name: "tickwork-config" } },
        { secretRef: { name: "tickwork-secrets" } },
      ]);
    }
    // The list is the code's: it holds the variables from the start of the project and the later ones.
    expect(VARIABLES).toEqual(
      expect.arrayContaining(["REDIS_URL", "CRON_SECRET", "TICKWORK_GROUP"]),
    );
    expect(VARIABLES.length).toBeGreaterThanOrEqual(25);
  });
});

describe("the YAML reader the checks above rely on", () => {
  it("reads nested maps, `- key:` items, flow lists, quotes and comments", () => {
    const [doc] = parseYamlDocuments(
      [
        "a: 1 # one",
        "b:",
        "  - name: x",
        "    args: [\"s\", 'it''s', --role]",
        "  - plain text",
        "c:",
        "- 2",
        'd: "# not a comment"',
        "e: {}",
      ].join("\n"),
    );
    expect(doc).toEqual({
      a: 1,
      b: [{ name: "x", args: ["s", "it's", "--role"] }, "plain text"],
      c: [2],
      d: "# not a comment",
      e: {},
    });
  });

  it("refuses what it does not understand instead of guessing", () => {
    for (const bad of [
      "a:\n\tb: 1",
      "a: 1\na: 2",
      "a: &x 1",
      "a: |\n  text",
      "a:\n    b: 1\n  c: 2",
    ]) {
      expect(() => parseYamlDocuments(bad), JSON.stringify(bad)).toThrow(SyntaxError);
    }
  });
});

function walk(dir: string): string[] {
  return readdirSync(join(ROOT, dir)).flatMap((entry) => {
    const path = `${dir}/${entry}`;
    if (statSync(join(ROOT, path)).isDirectory()) return walk(path);
    return path.endsWith(".ts") ? [path] : [];
  });
}
