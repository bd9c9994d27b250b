// Offline checks of deploy/: every Kubernetes manifest against the Kubernetes schemas
// (kubernetes-models), the NetworkPolicy's exact shape, and the Dockerfile against the tree.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import YAML from "yaml";
import { ConfigMap, Namespace, Secret, Service } from "kubernetes-models/v1";
import { DaemonSet, StatefulSet } from "kubernetes-models/apps/v1";
import { NetworkPolicy } from "kubernetes-models/networking.k8s.io/v1";
import { PodDisruptionBudget } from "kubernetes-models/policy/v1";
import { baseline, evaluate, podTemplate, restricted, strategicMerge } from "./pod_security.mjs";

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

// --- Pod Security Standards (issue #46): every pod template in deploy/, control by control.

// Every YAML document under deploy/, by file; a kustomization's patches are applied to its
// resources (the privileged variant is one), not read as workloads of their own.
function yamlFiles(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return yamlFiles(p);
    return e.name.endsWith(".yaml") || e.name.endsWith(".yml") ? [p] : [];
  });
}
const docsOf = (file) => YAML.parseAllDocuments(fs.readFileSync(file, "utf8")).map((d) => d.toJS()).filter(Boolean);
const rel = (p) => path.relative(root, p);

function kustomizeBuild(dir) {
  const k = YAML.parse(fs.readFileSync(path.join(dir, "kustomization.yaml"), "utf8"));
  let docs = (k.resources ?? []).flatMap((r) => {
    const p = path.resolve(dir, r);
    return fs.statSync(p).isDirectory() ? kustomizeBuild(p) : docsOf(p);
  });
  for (const patch of k.patches ?? []) {
    for (const pd of docsOf(path.resolve(dir, patch.path))) {
      docs = docs.map((d) => (d.kind === pd.kind && d.metadata?.name === pd.metadata.name ? strategicMerge(d, pd) : d));
    }
  }
  return docs;
}

function podTemplatesInDeploy() {
  const files = yamlFiles(path.join(root, "deploy"));
  const kustomizations = files.filter((f) => path.basename(f) === "kustomization.yaml");
  const patches = new Set(kustomizations.flatMap((k) =>
    (YAML.parse(fs.readFileSync(k, "utf8")).patches ?? []).map((p) => path.resolve(path.dirname(k), p.path))));
  const found = [];
  for (const f of files) {
    if (patches.has(f) || kustomizations.includes(f)) continue;
    for (const doc of docsOf(f)) {
      const t = podTemplate(doc);
      if (t) found.push({ where: `${rel(f)} ${doc.kind}/${doc.metadata.name}`, doc, template: t });
    }
  }
  // A kustomization with patches makes workloads of its own: its build is checked as such.
  for (const k of kustomizations) {
    if (!(YAML.parse(fs.readFileSync(k, "utf8")).patches ?? []).length) continue;
    for (const doc of kustomizeBuild(path.dirname(k))) {
      const t = podTemplate(doc);
      if (t) found.push({ where: `${rel(path.dirname(k))}/ (kustomize build) ${doc.kind}/${doc.metadata.name}`, doc, template: t });
    }
  }
  return found;
}

// What each pod template is expected to give, and why.
const expected = {
  "deploy/k8s/statefulset.yaml StatefulSet/sandgate": {
    baseline: [],
    // Root of the pod's user namespace with SETUID/SETGID (per-sandbox id maps) and an unmasked
    // /proc (a fresh /proc per sandbox pid namespace): what restricted refuses by design.
    restricted: ["/proc Mount Type", "Capabilities", "Running as Non-root", "Running as Non-root user"],
  },
  "deploy/k8s/privileged/ (kustomize build) StatefulSet/sandgate": {
    // The privileged variant: CAP_SYS_ADMIN and no seccomp/AppArmor profile, by its nature.
    baseline: ["AppArmor", "Capabilities", "Seccomp"],
  },
  "deploy/k8s/security-profiles/node-profile-loader.yaml DaemonSet/sandgate-profile-loader": {
    // A node agent that installs the profiles, in a namespace of its own at "privileged".
    baseline: ["Host Namespaces", "HostPath Volumes", "Privileged Containers"],
  },
};

const templates = podTemplatesInDeploy();

test("Pod Security: every pod template in deploy/ is one the checks below expect", () => {
  assert.deepEqual(templates.map((t) => t.where).sort(), Object.keys(expected).sort());
});

for (const { where, template } of templates) {
  test(`Pod Security baseline, control by control: ${where}`, (t) => {
    const failed = evaluate(baseline, template.spec, template.metadata);
    for (const control of Object.keys(baseline))
      t.diagnostic(`baseline ${control}: ${failed[control] ? "FAIL " + failed[control].join("; ") : "pass"}`);
    assert.deepEqual(Object.keys(failed).sort(), expected[where].baseline, JSON.stringify(failed));
  });
}

test("Pod Security restricted: which controls the StatefulSet fails, and why", (t) => {
  const { template } = templates.find((x) => x.where.startsWith("deploy/k8s/statefulset.yaml"));
  const failed = evaluate(restricted, template.spec, template.metadata);
  for (const control of Object.keys(restricted))
    t.diagnostic(`restricted ${control}: ${failed[control] ? "FAIL " + failed[control].join("; ") : "pass"}`);
  assert.deepEqual(Object.keys(failed).sort(), expected["deploy/k8s/statefulset.yaml StatefulSet/sandgate"].restricted);
  assert.deepEqual(failed["Capabilities"], ["sandgate: adds SETUID", "sandgate: adds SETGID"]);
  assert.deepEqual(failed["/proc Mount Type"], ["sandgate: procMount Unmasked"]);
});

test("Pod Security: the StatefulSet's namespace enforces baseline at policy 1.35+, the others privileged", () => {
  const ns = manifests["namespace.yaml"].metadata.labels;
  assert.equal(ns["pod-security.kubernetes.io/enforce"], "baseline");
  const [major, minor] = ns["pod-security.kubernetes.io/enforce-version"].replace(/^v/, "").split(".").map(Number);
  assert.ok(major > 1 || minor >= 35, "Unmasked /proc with hostUsers: false is baseline from 1.35");
  const privileged = kustomizeBuild(path.join(k8s, "privileged")).find((d) => d.kind === "Namespace");
  assert.equal(privileged.metadata.labels["pod-security.kubernetes.io/enforce"], "privileged");
  assert.equal(privileged.metadata.labels["pod-security.kubernetes.io/enforce-version"], undefined);
  const loader = docsOf(path.join(k8s, "security-profiles/node-profile-loader.yaml")).find((d) => d.kind === "Namespace");
  assert.equal(loader.metadata.labels["pod-security.kubernetes.io/enforce"], "privileged");
});

test("Pod Security: the checks are real (each breach of the StatefulSet is caught by its control)", () => {
  const { template } = templates.find((x) => x.where.startsWith("deploy/k8s/statefulset.yaml"));
  const breach = (f) => {
    const copy = structuredClone(template);
    f(copy.spec, copy.spec.containers[0].securityContext);
    return Object.keys(evaluate(baseline, copy.spec, copy.metadata));
  };
  assert.deepEqual(breach((_, sc) => sc.capabilities.add.push("SYS_ADMIN")), ["Capabilities"]);
  assert.deepEqual(breach((_, sc) => { sc.seccompProfile = { type: "Unconfined" }; }), ["Seccomp"]);
  assert.deepEqual(breach((_, sc) => { sc.appArmorProfile = { type: "Unconfined" }; }), ["AppArmor"]);
  assert.deepEqual(breach((spec) => { spec.hostUsers = true; }), ["/proc Mount Type"]);
  assert.deepEqual(breach((_, sc) => { sc.privileged = true; }), ["Privileged Containers"]);
  assert.deepEqual(breach((spec) => { spec.hostPID = true; }), ["Host Namespaces"]);
  assert.deepEqual(breach((spec) => { spec.volumes.push({ name: "h", hostPath: { path: "/" } }); }), ["HostPath Volumes"]);
  assert.deepEqual(breach((spec) => { spec.containers[0].ports[0].hostPort = 80; }), ["Host Ports"]);
  assert.deepEqual(breach((_, sc) => { sc.seLinuxOptions = { type: "spc_t" }; }), ["SELinux"]);
  assert.deepEqual(breach((spec) => { spec.securityContext = { sysctls: [{ name: "kernel.msgmax", value: "1" }] }; }), ["Sysctls"]);
  assert.deepEqual(breach((_, sc) => { sc.windowsOptions = { hostProcess: true }; }), ["HostProcess"]);
});

test("the privileged variant and the profile loader are valid per the Kubernetes schema", () => {
  const sts = kustomizeBuild(path.join(k8s, "privileged")).find((d) => d.kind === "StatefulSet");
  new StatefulSet(sts).validate();
  const sc = sts.spec.template.spec.containers[0].securityContext;
  assert.deepEqual(sc.seccompProfile, { type: "Unconfined" });
  assert.ok(sc.capabilities.add.includes("SYS_ADMIN"));
  const loader = docsOf(path.join(k8s, "security-profiles/node-profile-loader.yaml"));
  new DaemonSet(loader.find((d) => d.kind === "DaemonSet")).validate();
  new Namespace(loader.find((d) => d.kind === "Namespace")).validate();
  const k = YAML.parse(fs.readFileSync(path.join(k8s, "security-profiles/kustomization.yaml"), "utf8"));
  for (const f of k.configMapGenerator[0].files) assert.ok(fs.existsSync(path.join(k8s, "security-profiles", f)), f);
});

test("the seccomp profile: the kubelet's JSON and the operator's resource agree, and it allows sandbox creation", () => {
  const dir = path.join(k8s, "security-profiles");
  const json = JSON.parse(fs.readFileSync(path.join(dir, "sandgate.json"), "utf8"));
  const spo = YAML.parse(fs.readFileSync(path.join(dir, "seccompprofile.yaml"), "utf8"));
  assert.equal(spo.kind, "SeccompProfile");
  assert.deepEqual(spo.spec, json);
  const sts = manifests["statefulset.yaml"].spec.template.spec.containers[0].securityContext;
  assert.deepEqual(sts.seccompProfile, { type: "Localhost", localhostProfile: "sandgate.json" });
  assert.deepEqual(sts.appArmorProfile, { type: "Localhost", localhostProfile: "sandgate" });
  assert.match(fs.readFileSync(path.join(dir, "sandgate.apparmor"), "utf8"), /^profile sandgate /m);
  const allowed = new Set(json.syscalls.filter((r) => r.action === "SCMP_ACT_ALLOW" && !r.args).flatMap((r) => r.names));
  for (const call of ["clone", "unshare", "mount", "umount2", "pivot_root", "sethostname", "fsopen", "fsconfig", "fsmount"])
    assert.ok(allowed.has(call), call);
  // Not what sandgate does not call: joining or moving namespaces and mounts, keys, bpf.
  for (const call of ["setns", "open_tree", "move_mount", "mount_setattr", "keyctl", "bpf", "umount"])
    assert.ok(!allowed.has(call), call);
  const runtimeDefault = JSON.parse(fs.readFileSync(path.join(root, "tests/vm/jobs/runtime-default-seccomp.json"), "utf8"));
  const defaults = new Set(runtimeDefault.syscalls.filter((r) => r.action === "SCMP_ACT_ALLOW" && !r.args).flatMap((r) => r.names));
  assert.deepEqual([...allowed].filter((c) => !defaults.has(c)).sort(),
    ["clone", "fsconfig", "fsmount", "fsopen", "mount", "pivot_root", "sethostname", "umount2", "unshare"]);
});
