// helmrender prints what `helm template` prints for Shoal's charts, for machines without helm
// (Debian packages Go's text/template and sprig, not helm). It implements the part of Helm's
// template semantics the charts use:
//
//   - .Values: values.yaml deep-merged with each -f file, then each --set a.b=c (a null value
//     deletes a key, as in Helm); .Release (Name, Namespace, Service, IsInstall, IsUpgrade,
//     Revision); .Chart (Chart.yaml with Helm's capitalised field names); .Template (Name,
//     BasePath); .Capabilities (KubeVersion, APIVersions.Has).
//   - sprig's functions (without env/expandenv) plus include, tpl, required, fail, toYaml,
//     fromYaml, toJson, fromJson and lookup (always empty: there is no cluster, as in
//     `helm template`).
//   - templates whose name starts with "_" define helpers and are not printed; NOTES.txt is
//     skipped; crds/ files are printed as-is, first, with --include-crds.
//
// Output: "---\n# Source: <chart>/<path>\n<document>" per non-empty document, files in Helm's
// install order by kind, then by path. Build offline with Debian's Go packages:
//
//	GOPATH=/usr/share/gocode GO111MODULE=off go build -o helmrender .
//
// Usage: helmrender [--include-crds] [-f values.yaml]... [--set k=v[,k=v]]... [-n ns]
//
//	[--kube-version v1.29.0] [--api-versions group/version]... RELEASE CHART_DIR
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig"
	"gopkg.in/yaml.v3"
)

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// APIVersions answers .Capabilities.APIVersions.Has.
type APIVersions []string

// Has reports whether "group/version" or "group/version/Kind" is available.
func (a APIVersions) Has(v string) bool {
	for _, x := range a {
		if x == v {
			return true
		}
	}
	return false
}

type KubeVersion struct{ Version, Major, Minor, GitVersion string }

func (k KubeVersion) String() string { return k.Version }

type Capabilities struct {
	KubeVersion KubeVersion
	APIVersions APIVersions
}

// Helm's built-in API versions (abridged to what charts test for).
var defaultAPIVersions = []string{"v1", "apps/v1", "batch/v1", "policy/v1", "rbac.authorization.k8s.io/v1",
	"coordination.k8s.io/v1", "apiextensions.k8s.io/v1", "networking.k8s.io/v1", "autoscaling/v2",
	"storage.k8s.io/v1", "scheduling.k8s.io/v1", "discovery.k8s.io/v1", "events.k8s.io/v1"}

// Helm's InstallOrder: kinds applied first come first in the output.
var installOrder = []string{"PriorityClass", "Namespace", "NetworkPolicy", "ResourceQuota",
	"LimitRange", "PodSecurityPolicy", "PodDisruptionBudget", "ServiceAccount", "Secret",
	"SecretList", "ConfigMap", "StorageClass", "PersistentVolume", "PersistentVolumeClaim",
	"CustomResourceDefinition", "ClusterRole", "ClusterRoleList", "ClusterRoleBinding",
	"ClusterRoleBindingList", "Role", "RoleList", "RoleBinding", "RoleBindingList", "Service",
	"DaemonSet", "Pod", "ReplicationController", "ReplicaSet", "Deployment",
	"HorizontalPodAutoscaler", "StatefulSet", "Job", "CronJob", "IngressClass", "Ingress",
	"APIService"}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "helmrender:", err)
		os.Exit(1)
	}
}

func run() error {
	var valueFiles, sets, apiVersions listFlag
	ns := flag.String("n", "default", "release namespace")
	flag.StringVar(ns, "namespace", "default", "release namespace")
	kube := flag.String("kube-version", "v1.29.0", "Kubernetes version for .Capabilities")
	crds := flag.Bool("include-crds", false, "print the chart's crds/ files")
	flag.Var(&valueFiles, "f", "values file (repeatable)")
	flag.Var(&valueFiles, "values", "values file (repeatable)")
	flag.Var(&sets, "set", "a.b=c[,d=e] (repeatable)")
	flag.Var(&apiVersions, "api-versions", "extra API version for .Capabilities (repeatable)")
	// Flags may follow the positional arguments, as with helm.
	var pos []string
	for args := os.Args[1:]; ; {
		if err := flag.CommandLine.Parse(args); err != nil {
			return err
		}
		if flag.NArg() == 0 {
			break
		}
		pos = append(pos, flag.Arg(0))
		args = flag.Args()[1:]
	}
	if len(pos) != 2 {
		return errors.New("usage: helmrender [flags] RELEASE CHART_DIR")
	}
	release, dir := pos[0], pos[1]

	chart, err := readYAMLMap(filepath.Join(dir, "Chart.yaml"))
	if err != nil {
		return err
	}
	values, err := readYAMLMap(filepath.Join(dir, "values.yaml"))
	if err != nil && !os.IsNotExist(errors.Unwrap(err)) {
		return err
	}
	if values == nil {
		values = map[string]interface{}{}
	}
	for _, f := range valueFiles {
		v, err := readYAMLMap(f)
		if err != nil {
			return err
		}
		values = mergeValues(values, v)
	}
	for _, s := range sets {
		if err := applySet(values, s); err != nil {
			return err
		}
	}
	chartName := fmt.Sprint(chart["name"])

	v := strings.TrimPrefix(*kube, "v")
	parts := strings.SplitN(v, ".", 3)
	for len(parts) < 2 {
		parts = append(parts, "0")
	}
	top := map[string]interface{}{
		"Values": values,
		"Release": map[string]interface{}{"Name": release, "Namespace": *ns, "Service": "Helm",
			"IsInstall": true, "IsUpgrade": false, "Revision": 1},
		"Chart": helmChart(chart),
		"Capabilities": Capabilities{
			KubeVersion: KubeVersion{Version: "v" + v, Major: parts[0], Minor: parts[1], GitVersion: "v" + v},
			APIVersions: append(APIVersions(defaultAPIVersions), apiVersions...)},
	}

	var out bytes.Buffer
	if *crds {
		files, _ := filepath.Glob(filepath.Join(dir, "crds", "*"))
		sort.Strings(files)
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				return err
			}
			for _, doc := range splitDocs(string(b)) {
				fmt.Fprintf(&out, "---\n# Source: %s/crds/%s\n%s\n", chartName, filepath.Base(f), doc)
			}
		}
	}
	rendered, err := renderTemplates(dir, chartName, top)
	if err != nil {
		return err
	}
	out.WriteString(rendered)
	_, err = os.Stdout.Write(out.Bytes())
	return err
}

// helmChart maps Chart.yaml's keys to Helm's field names (.Chart.Name, .Chart.AppVersion...).
func helmChart(c map[string]interface{}) map[string]interface{} {
	m := map[string]interface{}{}
	for k, v := range c {
		m[strings.ToUpper(k[:1])+k[1:]] = v
	}
	return m
}

type doc struct {
	source, body, kind string
	order              int
}

func renderTemplates(dir, chartName string, top map[string]interface{}) (string, error) {
	tdir := filepath.Join(dir, "templates")
	var paths []string
	err := filepath.Walk(tdir, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			paths = append(paths, p)
		}
		return err
	})
	if err != nil {
		return "", err
	}
	sort.Strings(paths)

	t := template.New("gotpl").Option("missingkey=zero")
	funcs := funcMap(t)
	t.Funcs(funcs)
	for _, p := range paths {
		rel, _ := filepath.Rel(dir, p)
		name := chartName + "/" + filepath.ToSlash(rel)
		b, err := os.ReadFile(p)
		if err != nil {
			return "", err
		}
		if _, err := t.New(name).Parse(string(b)); err != nil {
			return "", err
		}
	}

	var docs []doc
	for _, p := range paths {
		rel, _ := filepath.Rel(dir, p)
		base := filepath.Base(p)
		if strings.HasPrefix(base, "_") || base == "NOTES.txt" {
			continue
		}
		name := chartName + "/" + filepath.ToSlash(rel)
		ctx := map[string]interface{}{}
		for k, v := range top {
			ctx[k] = v
		}
		ctx["Template"] = map[string]interface{}{"Name": name, "BasePath": chartName + "/templates"}
		var buf bytes.Buffer
		if err := t.ExecuteTemplate(&buf, name, ctx); err != nil {
			return "", err
		}
		text := strings.ReplaceAll(buf.String(), "<no value>", "")
		for _, d := range splitDocs(text) {
			var head struct{ Kind string }
			if err := yaml.Unmarshal([]byte(d), &head); err != nil {
				return "", fmt.Errorf("%s: rendered invalid YAML: %v\n%s", name, err, d)
			}
			docs = append(docs, doc{source: name, body: d, kind: head.Kind, order: kindOrder(head.Kind)})
		}
	}
	sort.SliceStable(docs, func(i, j int) bool { return docs[i].order < docs[j].order })
	var out strings.Builder
	for _, d := range docs {
		fmt.Fprintf(&out, "---\n# Source: %s\n%s\n", d.source, d.body)
	}
	return out.String(), nil
}

func kindOrder(kind string) int {
	for i, k := range installOrder {
		if k == kind {
			return i
		}
	}
	return len(installOrder)
}

// splitDocs splits a YAML stream on "---" lines, dropping documents that hold only comments or
// whitespace (Helm prints nothing for those).
func splitDocs(s string) []string {
	var docs []string
	var cur []string
	flush := func() {
		d := strings.Trim(strings.Join(cur, "\n"), "\n")
		d = strings.TrimRight(d, " \n")
		cur = nil
		for _, line := range strings.Split(d, "\n") {
			if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "#") {
				docs = append(docs, d)
				return
			}
		}
	}
	for _, line := range strings.Split(s, "\n") {
		if strings.TrimRight(line, " ") == "---" {
			flush()
			continue
		}
		cur = append(cur, line)
	}
	flush()
	return docs
}

func funcMap(t *template.Template) template.FuncMap {
	f := sprig.TxtFuncMap()
	delete(f, "env")
	delete(f, "expandenv")
	f["toYaml"] = toYaml
	f["fromYaml"] = func(s string) map[string]interface{} {
		m := map[string]interface{}{}
		if err := yaml.Unmarshal([]byte(s), &m); err != nil {
			m["Error"] = err.Error()
		}
		return m
	}
	f["toJson"] = func(v interface{}) string {
		b, err := json.Marshal(v)
		if err != nil {
			return ""
		}
		return string(b)
	}
	f["fromJson"] = func(s string) map[string]interface{} {
		m := map[string]interface{}{}
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			m["Error"] = err.Error()
		}
		return m
	}
	f["required"] = func(msg string, v interface{}) (interface{}, error) {
		if v == nil {
			return nil, errors.New(msg)
		}
		if s, ok := v.(string); ok && s == "" {
			return nil, errors.New(msg)
		}
		return v, nil
	}
	f["fail"] = func(msg string) (string, error) { return "", errors.New(msg) }
	f["lookup"] = func(apiVersion, kind, namespace, name string) map[string]interface{} {
		return map[string]interface{}{}
	}
	f["include"] = func(name string, data interface{}) (string, error) {
		var buf bytes.Buffer
		err := t.ExecuteTemplate(&buf, name, data)
		return buf.String(), err
	}
	f["tpl"] = func(text string, data interface{}) (string, error) {
		c, err := t.Clone()
		if err != nil {
			return "", err
		}
		nt, err := c.New("tpl").Parse(text)
		if err != nil {
			return "", err
		}
		var buf bytes.Buffer
		if err := nt.Execute(&buf, data); err != nil {
			return "", err
		}
		return strings.ReplaceAll(buf.String(), "<no value>", ""), nil
	}
	return f
}

// toYaml is Helm's: the YAML of the value without the trailing newline; "" on error.
func toYaml(v interface{}) string {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		return ""
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

func readYAMLMap(path string) (map[string]interface{}, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	m := map[string]interface{}{}
	if err := yaml.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return m, nil
}

// mergeValues deep-merges src into dst like Helm: maps merge, anything else replaces, and a null
// in src deletes the key.
func mergeValues(dst, src map[string]interface{}) map[string]interface{} {
	for k, sv := range src {
		if sv == nil {
			delete(dst, k)
			continue
		}
		sm, sIsMap := sv.(map[string]interface{})
		dm, dIsMap := dst[k].(map[string]interface{})
		if sIsMap && dIsMap {
			dst[k] = mergeValues(dm, sm)
		} else {
			dst[k] = sv
		}
	}
	return dst
}

// applySet applies one --set argument: comma-separated a.b.c=value, value typed like Helm
// (integers, true/false, null; anything else is a string).
func applySet(values map[string]interface{}, arg string) error {
	for _, kv := range strings.Split(arg, ",") {
		eq := strings.IndexByte(kv, '=')
		if eq <= 0 {
			return fmt.Errorf("--set %q: want key=value", kv)
		}
		keys := strings.Split(kv[:eq], ".")
		m := values
		for _, k := range keys[:len(keys)-1] {
			next, ok := m[k].(map[string]interface{})
			if !ok {
				next = map[string]interface{}{}
				m[k] = next
			}
			m = next
		}
		last := keys[len(keys)-1]
		raw := kv[eq+1:]
		switch {
		case raw == "null":
			delete(m, last)
		case raw == "true" || raw == "false":
			m[last] = raw == "true"
		default:
			if n, err := strconv.ParseInt(raw, 10, 64); err == nil {
				m[last] = n
			} else {
				m[last] = raw
			}
		}
	}
	return nil
}
