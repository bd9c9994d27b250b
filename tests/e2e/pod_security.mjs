// The Pod Security Standards' controls, as the Kubernetes documentation's table states them
// (https://kubernetes.io/docs/concepts/security/pod-security-standards/), each a function of a
// pod spec (and its metadata) that returns the violations it finds: [] when the pod passes.
// Policy version 1.35 (what deploy/k8s/namespace.yaml pins): baseline allows procMount Unmasked
// for pods with hostUsers: false.

const containersOf = (spec) => [
  ...(spec.initContainers ?? []),
  ...(spec.containers ?? []),
  ...(spec.ephemeralContainers ?? []),
];

// What each control checks, over the pod-level field and every container's.
const eachContainer = (spec, f) => containersOf(spec).flatMap((c) => f(c).map((v) => `${c.name}: ${v}`));

const BASELINE_CAPABILITIES = new Set([
  "AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "NET_BIND_SERVICE",
  "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT",
]);
const SAFE_SYSCTLS = new Set([
  "kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.ip_unprivileged_port_start",
  "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range", "net.ipv4.ip_local_reserved_ports",
  "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl",
  "net.ipv4.tcp_keepalive_probes",
]);
const SELINUX_TYPES = new Set(["", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"]);
const RESTRICTED_VOLUMES = new Set([
  "configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim", "projected", "secret",
]);
const capName = (c) => c.replace(/^CAP_/, "");

function seLinux(options, where) {
  if (!options) return [];
  const out = [];
  if (!SELINUX_TYPES.has(options.type ?? "")) out.push(`${where}seLinuxOptions.type ${options.type}`);
  if (options.user) out.push(`${where}seLinuxOptions.user ${options.user}`);
  if (options.role) out.push(`${where}seLinuxOptions.role ${options.role}`);
  return out;
}

export const baseline = {
  "HostProcess": (spec) => [
    ...(spec.securityContext?.windowsOptions?.hostProcess ? ["pod: windowsOptions.hostProcess"] : []),
    ...eachContainer(spec, (c) => (c.securityContext?.windowsOptions?.hostProcess ? ["windowsOptions.hostProcess"] : [])),
  ],
  "Host Namespaces": (spec) => ["hostNetwork", "hostPID", "hostIPC"].filter((f) => spec[f] === true),
  "Privileged Containers": (spec) => eachContainer(spec, (c) => (c.securityContext?.privileged ? ["privileged: true"] : [])),
  "Capabilities": (spec) =>
    eachContainer(spec, (c) =>
      (c.securityContext?.capabilities?.add ?? []).filter((a) => !BASELINE_CAPABILITIES.has(capName(a))).map((a) => `adds ${a}`)),
  "HostPath Volumes": (spec) => (spec.volumes ?? []).filter((v) => v.hostPath).map((v) => `volume ${v.name}: hostPath ${v.hostPath.path}`),
  "Host Ports": (spec) =>
    eachContainer(spec, (c) => (c.ports ?? []).filter((p) => p.hostPort).map((p) => `hostPort ${p.hostPort}`)),
  "AppArmor": (spec, metadata) => {
    const bad = (p) => p && !["RuntimeDefault", "Localhost"].includes(p.type);
    const out = [];
    if (bad(spec.securityContext?.appArmorProfile)) out.push(`pod: appArmorProfile ${spec.securityContext.appArmorProfile.type}`);
    out.push(...eachContainer(spec, (c) => (bad(c.securityContext?.appArmorProfile) ? [`appArmorProfile ${c.securityContext.appArmorProfile.type}`] : [])));
    for (const [k, v] of Object.entries(metadata?.annotations ?? {}))
      if (k.startsWith("container.apparmor.security.beta.kubernetes.io/") && v !== "runtime/default" && !v.startsWith("localhost/"))
        out.push(`annotation ${k}: ${v}`);
    return out;
  },
  "SELinux": (spec) => [
    ...seLinux(spec.securityContext?.seLinuxOptions, "pod: "),
    ...eachContainer(spec, (c) => seLinux(c.securityContext?.seLinuxOptions, "")),
  ],
  "/proc Mount Type": (spec) =>
    eachContainer(spec, (c) => {
      const m = c.securityContext?.procMount;
      if (m === undefined || m === "Default") return [];
      // Policy 1.35+: Unmasked for a pod in a user namespace of its own.
      if (m === "Unmasked" && spec.hostUsers === false) return [];
      return [`procMount ${m}${m === "Unmasked" ? " without hostUsers: false" : ""}`];
    }),
  "Seccomp": (spec) => [
    ...(spec.securityContext?.seccompProfile?.type === "Unconfined" ? ["pod: seccompProfile Unconfined"] : []),
    ...eachContainer(spec, (c) => (c.securityContext?.seccompProfile?.type === "Unconfined" ? ["seccompProfile Unconfined"] : [])),
  ],
  "Sysctls": (spec) => (spec.securityContext?.sysctls ?? []).filter((s) => !SAFE_SYSCTLS.has(s.name)).map((s) => `sysctl ${s.name}`),
};

// Restricted: every baseline control, Unmasked /proc never, and these.
export const restricted = {
  ...baseline,
  "/proc Mount Type": (spec) =>
    eachContainer(spec, (c) => (c.securityContext?.procMount && c.securityContext.procMount !== "Default" ? [`procMount ${c.securityContext.procMount}`] : [])),
  "Volume Types": (spec) =>
    (spec.volumes ?? []).flatMap((v) => {
      const kind = Object.keys(v).find((k) => k !== "name");
      return RESTRICTED_VOLUMES.has(kind) ? [] : [`volume ${v.name}: ${kind}`];
    }),
  "Privilege Escalation": (spec) =>
    eachContainer(spec, (c) => (c.securityContext?.allowPrivilegeEscalation === false ? [] : ["allowPrivilegeEscalation is not false"])),
  "Running as Non-root": (spec) =>
    eachContainer(spec, (c) => {
      const own = c.securityContext?.runAsNonRoot;
      const nonRoot = own ?? spec.securityContext?.runAsNonRoot;
      return nonRoot === true ? [] : [`runAsNonRoot ${nonRoot ?? "unset"}`];
    }),
  "Running as Non-root user": (spec) => [
    ...(spec.securityContext?.runAsUser === 0 ? ["pod: runAsUser 0"] : []),
    ...eachContainer(spec, (c) => (c.securityContext?.runAsUser === 0 ? ["runAsUser 0"] : [])),
  ],
  "Seccomp": (spec) =>
    eachContainer(spec, (c) => {
      const type = c.securityContext?.seccompProfile?.type ?? spec.securityContext?.seccompProfile?.type;
      return ["RuntimeDefault", "Localhost"].includes(type) ? [] : [`seccompProfile ${type ?? "unset"}`];
    }),
  "Capabilities": (spec) =>
    eachContainer(spec, (c) => {
      const caps = c.securityContext?.capabilities ?? {};
      const out = [];
      if (!(caps.drop ?? []).map(capName).includes("ALL")) out.push("does not drop ALL");
      for (const a of caps.add ?? []) if (capName(a) !== "NET_BIND_SERVICE") out.push(`adds ${a}`);
      return out;
    }),
};

// Every control of `level` applied to a pod template: { control: [violations] } for those that
// fail.
export function evaluate(level, spec, metadata) {
  const failed = {};
  for (const [control, check] of Object.entries(level)) {
    const violations = check(spec, metadata);
    if (violations.length) failed[control] = violations;
  }
  return failed;
}

// The pod template of a workload (or the pod itself).
export function podTemplate(doc) {
  switch (doc.kind) {
    case "Pod":
      return { spec: doc.spec, metadata: doc.metadata };
    case "CronJob":
      return doc.spec.jobTemplate.spec.template;
    case "Deployment": case "StatefulSet": case "DaemonSet": case "ReplicaSet": case "Job": case "ReplicationController":
      return doc.spec.template;
    default:
      return null;
  }
}

// Kubernetes' strategic merge for what deploy/'s patches use: maps merge, null deletes, lists of
// containers merge by name, other lists are replaced.
export function strategicMerge(base, patch) {
  if (patch === null) return undefined;
  if (Array.isArray(patch)) {
    if (!Array.isArray(base) || !patch.every((p) => p && typeof p === "object" && "name" in p)) return structuredClone(patch);
    const out = structuredClone(base);
    for (const p of patch) {
      const i = out.findIndex((b) => b.name === p.name);
      if (i < 0) out.push(structuredClone(p));
      else out[i] = strategicMerge(out[i], p);
    }
    return out;
  }
  if (patch && typeof patch === "object") {
    const out = base && typeof base === "object" && !Array.isArray(base) ? structuredClone(base) : {};
    for (const [k, v] of Object.entries(patch)) {
      const merged = strategicMerge(out[k], v);
      if (merged === undefined) delete out[k];
      else out[k] = merged;
    }
    return out;
  }
  return patch;
}
