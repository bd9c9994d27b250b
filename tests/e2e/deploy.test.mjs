// Offline checks of deploy/: every Kubernetes manifest against the Kubernetes schemas
// (kubernetes-models), the NetworkPolicy's exact shape, and the Dockerfile against the tree.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import YAML from "yaml";
import { ConfigMap, Namespace, Secret, Service } from "kubernetes-models/v1";
import { StatefulSet } from "kubernetes-models/apps/v1";
import { NetworkPolicy } from "kubernetes-models/networking.k8s.io/v1";
import { PodDisruptionBudget } from "kubernetes-models/policy/v1";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const k8s = path.join(root, "deploy/k8s");
const models = {
  "v1/Namespace": Namespace,
  "v1/ConfigMap": ConfigMap,
  "v1/Secret": Secret,
  "v1/Service": Service,
  "apps/v1/StatefulSet": StatefulSet,
  "networking.k8s.io/v1/NetworkPolicy": NetworkPolicy,
  "policy/v1/PodDisruptionBudget": PodDisruptionBudget,
};
const kustomization = YAML.parse(fs.readFileSync(path.join(k8s, "kustomization.yaml"), "utf8"));
const manifests = Object.fromEntries(
  kustomization.resources.map((file) => [file, YAML.parse(fs.readFileSync(path.join(k8s, file), "utf8"))]),
);

test("the kustomization lists every manifest in deploy/k8s, and only those", () => {
  const files = fs.readdirSync(k8s).filter((f) => f.endsWith(".yaml") && f !== "kustomization.yaml");
  assert.deepEqual([...kustomization.resources].sort(), files.sort());
});

for (const [file, doc] of Object.entries(manifests)) {
  test(`${file} is a valid ${doc.kind} per the Kubernetes schema`, () => {
    const Model = models[`${doc.apiVersion}/${doc.kind}`];
    assert.ok(Model, `no schema for ${doc.apiVersion} ${doc.kind}`);
    new Model(doc).validate();  // throws with the offending path
  });
}

test("the schema check is real: a broken manifest is refused", () => {
  const broken = structuredClone(manifests["statefulset.yaml"]);
  broken.spec.replicas = "three";
  assert.throws(() => new StatefulSet(broken).validate());
});

test("the NetworkPolicy denies all egress but the documented exceptions", () => {
  const policy = manifests["networkpolicy.yaml"];
  assert.deepEqual(policy.spec.policyTypes.sort(), ["Egress", "Ingress"]);
  // Ingress: the MCP port only, from anywhere the cluster routes.
  assert.deepEqual(policy.spec.ingress, [{ ports: [{ protocol: "TCP", port: 8080 }] }]);
  // Egress: exactly (1) the gateway's own replicas on 8080 and (2) cluster DNS on 53.
  assert.equal(policy.spec.egress.length, 2);
  const [peers, dns] = policy.spec.egress;
  assert.deepEqual(peers.to, [{ podSelector: { matchLabels: policy.spec.podSelector.matchLabels } }]);
  assert.deepEqual(peers.ports, [{ protocol: "TCP", port: 8080 }]);
  assert.equal(dns.to.length, 1);
  assert.deepEqual(dns.to[0].podSelector.matchLabels, { "k8s-app": "kube-dns" });
  assert.deepEqual(dns.ports.map((p) => p.port), [53, 53]);
  for (const rule of policy.spec.egress) {
    for (const peer of rule.to) assert.equal(peer.ipBlock, undefined, "no ipBlock: nothing outside the cluster");
  }
});

test("the OAuth issuer's policy adds only HTTPS to the issuer, for the gateway pods", () => {
  const policy = manifests["networkpolicy-oauth-issuer.yaml"];
  const gateway = manifests["networkpolicy.yaml"].spec.podSelector;
  assert.deepEqual(policy.spec.podSelector, gateway);
  // Egress only: it must not widen what may reach the pods.
  assert.deepEqual(policy.spec.policyTypes, ["Egress"]);
  assert.equal(policy.spec.ingress, undefined);
  assert.equal(policy.spec.egress.length, 1);
  assert.deepEqual(policy.spec.egress[0].ports, [{ protocol: "TCP", port: 443 }]);
  // The shipped range routes nowhere (RFC 5737) until the operator names the issuer's.
  assert.deepEqual(policy.spec.egress[0].to, [{ ipBlock: { cidr: "192.0.2.0/24" } }]);
});

test("the egress mirror's policy adds only HTTPS to the mirror, for the gateway pods", () => {
  const policy = manifests["networkpolicy-egress-mirror.yaml"];
  const gateway = manifests["networkpolicy.yaml"].spec.podSelector;
  // The gateway pods only: sandboxes have no interface, the gateway relays for them.
  assert.deepEqual(policy.spec.podSelector, gateway);
  assert.deepEqual(policy.spec.policyTypes, ["Egress"]);
  assert.equal(policy.spec.ingress, undefined);
  assert.equal(policy.spec.egress.length, 1);
  assert.deepEqual(policy.spec.egress[0].ports, [{ protocol: "TCP", port: 443 }]);
  // The shipped range routes nowhere (RFC 5737) until the operator names the mirror's.
  assert.deepEqual(policy.spec.egress[0].to, [{ ipBlock: { cidr: "198.51.100.0/24" } }]);
});

test("the workload has probes, a grace period covering the drain, and the documented securityContext", () => {
  const sts = manifests["statefulset.yaml"];
  const pod = sts.spec.template.spec;
  const [c] = pod.containers;
  assert.equal(c.readinessProbe.httpGet.path, "/readyz");
  assert.equal(c.livenessProbe.httpGet.path, "/healthz");
  const grace = Number(manifests["configmap.yaml"].data.SANDGATE_SHUTDOWN_GRACE);
  assert.ok(pod.terminationGracePeriodSeconds > grace);
  assert.equal(pod.hostUsers, false);
  assert.equal(c.securityContext.privileged, undefined);
  assert.deepEqual(c.securityContext.capabilities.drop, ["ALL"]);
  assert.equal(sts.spec.serviceName, manifests["service-peers.yaml"].metadata.name);
  // Replicas name their sessions after their pod and reach each other through the peers Service.
  assert.equal(c.env.find((e) => e.name === "SANDGATE_REPLICA_NAME").valueFrom.fieldRef.fieldPath, "metadata.name");
  const template = manifests["configmap.yaml"].data.SANDGATE_PEER_URL_TEMPLATE;
  assert.ok(template.includes(`{replica}.${sts.spec.serviceName}:`), template);
  assert.equal(manifests["service-peers.yaml"].spec.clusterIP, "None");
  assert.equal(pod.volumes.find((v) => v.name === "tokens").secret.secretName, manifests["secret.example.yaml"].metadata.name);
  // Restart survival: each replica's state directory is on a volume of its own, below the mount
  // (the gateway makes the directory itself, 0700).
  const claim = sts.spec.volumeClaimTemplates.find((t) => t.metadata.name === "state");
  assert.ok(claim, "a volumeClaimTemplate named state");
  const mount = c.volumeMounts.find((m) => m.name === "state");
  const stateDir = c.env.find((e) => e.name === "SANDGATE_STATE_DIR").value;
  assert.ok(stateDir.startsWith(mount.mountPath + "/"), `${stateDir} below ${mount.mountPath}`);
});

test("the Dockerfile builds from what the tree has and ships the runtimes", () => {
  const text = fs.readFileSync(path.join(root, "deploy/Dockerfile"), "utf8");
  const froms = [...text.matchAll(/^FROM\s+(\S+)/gm)].map((m) => m[1]);
  assert.deepEqual(froms, ["debian:12", "debian:12"]);
  const build = text.slice(0, text.lastIndexOf("FROM "));
  assert.match(build, /\bpython3\b/, "the build stage lacks python3 (cmake/check_layers.py)");
  // Every directory the top-level CMakeLists adds or includes from (the test suites aside: off in
  // the release preset; tests/support is not: bench links it) is copied.
  const cmake = fs.readFileSync(path.join(root, "CMakeLists.txt"), "utf8");
  const subdirs = [...cmake.matchAll(/^\s*add_subdirectory\(([\w/]+)\)/gm)]
    .map((m) => m[1])
    .filter((d) => d !== "tests" && d !== "tests/fuzz");
  for (const m of cmake.matchAll(/^\s*include\((\w+)\//gm)) subdirs.push(m[1]);
  const copied = [...text.matchAll(/^COPY\s+(?!--)(\S+)/gm)].map((m) => m[1]);
  for (const dir of subdirs) assert.ok(copied.includes(dir), `Dockerfile does not COPY ${dir}`);
  for (const src of copied) {
    for (const p of src.split(/\s+/)) assert.ok(fs.existsSync(path.join(root, p)), `COPY source ${p} missing`);
  }
  const runtime = text.slice(text.lastIndexOf("FROM "));
  for (const pkg of ["python3-numpy", "python3-pandas", "python3-matplotlib", "python3-yaml", "python3-jinja2", "python3-pil", "nodejs", "bash", "coreutils"])
    assert.match(runtime, new RegExp(`\\b${pkg}\\b`), `runtime stage lacks ${pkg}`);
  assert.match(runtime, /COPY --from=build \S+\/sandgate /);
});
