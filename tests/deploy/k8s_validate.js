// Validates Kubernetes objects with the npm package kubernetes-models (the API's OpenAPI
// schemas). Reads a JSON array of objects on stdin; prints a JSON array with, per object, null
// or the validation error. Objects of groups it has no models for are an error, except the
// groups listed in SKIP_GROUPS (checked elsewhere: shoal.dev against our CRDs).
"use strict";
const SKIP_GROUPS = new Set(["shoal.dev"]);

function modulePath(apiVersion) {
  const [group, version] = apiVersion.includes("/") ? apiVersion.split("/") : ["", apiVersion];
  if (group === "monitoring.coreos.com") {
    return `@kubernetes-models/prometheus-operator/${group}/${version}`;
  }
  return group === "" ? `kubernetes-models/${version}` : `kubernetes-models/${group}/${version}`;
}

let input = "";
process.stdin.on("data", (d) => (input += d));
process.stdin.on("end", () => {
  const results = JSON.parse(input).map((obj) => {
    const group = (obj.apiVersion || "").split("/").slice(0, -1).join("/");
    if (SKIP_GROUPS.has(group)) return null;
    let mod;
    try {
      mod = require(modulePath(obj.apiVersion));
    } catch (e) {
      return `no models for apiVersion ${obj.apiVersion}`;
    }
    const Model = mod[obj.kind];
    if (!Model) return `no model for ${obj.apiVersion} ${obj.kind}`;
    try {
      new Model(obj).validate();
      return null;
    } catch (e) {
      return String(e.message || e);
    }
  });
  process.stdout.write(JSON.stringify(results));
});
