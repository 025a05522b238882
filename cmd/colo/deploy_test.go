package main

import (
	"bytes"
	"errors"
	"io"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"colo/launch"
)

// k8sObject is the part of a Kubernetes object the manifests test reads.
type k8sObject struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name string `yaml:"name"`
	} `yaml:"metadata"`
	Spec struct {
		// Service
		ClusterIP string            `yaml:"clusterIP"`
		Selector  map[string]string `yaml:"selector"`
		Ports     []struct {
			Port int `yaml:"port"`
		} `yaml:"ports"`
		// Job
		CompletionMode string      `yaml:"completionMode"`
		Completions    int         `yaml:"completions"`
		Parallelism    int         `yaml:"parallelism"`
		Template       podTemplate `yaml:"template"`
	} `yaml:"spec"`
	StringData map[string]string `yaml:"stringData"`
}

type podTemplate struct {
	Metadata struct {
		Labels map[string]string `yaml:"labels"`
	} `yaml:"metadata"`
	Spec struct {
		Subdomain  string `yaml:"subdomain"`
		Containers []struct {
			Image string   `yaml:"image"`
			Args  []string `yaml:"args"`
			Env   []struct {
				Name      string `yaml:"name"`
				Value     string `yaml:"value"`
				ValueFrom *struct {
					FieldRef *struct {
						FieldPath string `yaml:"fieldPath"`
					} `yaml:"fieldRef"`
					SecretKeyRef *struct {
						Name string `yaml:"name"`
						Key  string `yaml:"key"`
					} `yaml:"secretKeyRef"`
				} `yaml:"valueFrom"`
			} `yaml:"env"`
			VolumeMounts []struct {
				Name      string `yaml:"name"`
				MountPath string `yaml:"mountPath"`
			} `yaml:"volumeMounts"`
		} `yaml:"containers"`
		Volumes []struct {
			Name                  string `yaml:"name"`
			PersistentVolumeClaim *struct {
				ClaimName string `yaml:"claimName"`
			} `yaml:"persistentVolumeClaim"`
			Secret *struct {
				SecretName string `yaml:"secretName"`
			} `yaml:"secret"`
		} `yaml:"volumes"`
	} `yaml:"spec"`
}

// readManifests parses every document of every YAML file in dir.
func readManifests(t *testing.T, dir string) []k8sObject {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests in %s: %v", dir, err)
	}
	var objs []k8sObject
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		dec.KnownFields(false)
		for {
			var o k8sObject
			if err := dec.Decode(&o); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if o.Kind == "" {
				t.Errorf("%s: a document without a kind", f)
			}
			objs = append(objs, o)
		}
	}
	return objs
}

// pod is a pod of a manifest with the values Kubernetes would give its
// environment: fieldRefs and secrets filled, $(VAR) expanded.
type pod struct {
	job  string
	env  map[string]string
	args []string
}

var k8sRef = regexp.MustCompile(`\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// TestKubernetesManifests parses deploy/kubernetes and checks that each
// pod's environment is what colo node reads: every COLO_ variable names
// one of its flags and parses, the DMLC variables are complete, and
// resolving them as colo node does gives the scheduler its Service's port
// and each machine of the Indexed Job its rank, the scheduler's address
// and its pod IP. The Secrets, claims and Services the pods refer to
// exist and match.
func TestKubernetesManifests(t *testing.T) {
	objs := readManifests(t, filepath.Join("..", "..", "deploy", "kubernetes"))
	byKind := map[string]map[string]k8sObject{}
	for _, o := range objs {
		if byKind[o.Kind] == nil {
			byKind[o.Kind] = map[string]k8sObject{}
		}
		byKind[o.Kind][o.Metadata.Name] = o
	}
	const podIP = "10.1.2.3"
	var pods []pod
	for _, job := range byKind["Job"] {
		tpl := job.Spec.Template
		if len(tpl.Spec.Containers) != 1 {
			t.Fatalf("job %s: %d containers, want 1", job.Metadata.Name, len(tpl.Spec.Containers))
		}
		c := tpl.Spec.Containers[0]
		claims := map[string]bool{}
		for _, v := range tpl.Spec.Volumes {
			if v.PersistentVolumeClaim != nil {
				if _, ok := byKind["PersistentVolumeClaim"][v.PersistentVolumeClaim.ClaimName]; !ok {
					t.Errorf("job %s: volume %s claims %s, which no manifest defines", job.Metadata.Name, v.Name, v.PersistentVolumeClaim.ClaimName)
				}
			}
			claims[v.Name] = true
		}
		for _, m := range c.VolumeMounts {
			if !claims[m.Name] {
				t.Errorf("job %s mounts volume %s, which it does not have", job.Metadata.Name, m.Name)
			}
		}
		// Files from Secrets: the path of each key of each mounted one.
		secretFiles := map[string]bool{}
		for _, m := range c.VolumeMounts {
			for _, v := range tpl.Spec.Volumes {
				if v.Name != m.Name || v.Secret == nil {
					continue
				}
				sec, ok := byKind["Secret"][v.Secret.SecretName]
				if !ok {
					t.Errorf("job %s: volume %s is secret %s, which no manifest defines", job.Metadata.Name, v.Name, v.Secret.SecretName)
				}
				for k := range sec.StringData {
					secretFiles[path.Join(m.MountPath, k)] = true
				}
			}
		}
		for _, e := range c.Env {
			if strings.HasPrefix(e.Name, "COLO_TLS_") && !secretFiles[e.Value] {
				t.Errorf("job %s: %s=%s is no key of a Secret the pod mounts (%v)", job.Metadata.Name, e.Name, e.Value, slices.Sorted(maps.Keys(secretFiles)))
			}
		}
		copies := max(job.Spec.Completions, 1)
		for index := range copies {
			p := pod{job: job.Metadata.Name, env: map[string]string{}, args: c.Args}
			for _, e := range c.Env {
				v := e.Value
				switch vf := e.ValueFrom; {
				case vf != nil && vf.FieldRef != nil:
					switch vf.FieldRef.FieldPath {
					case "status.podIP":
						v = podIP
					case "metadata.annotations['batch.kubernetes.io/job-completion-index']":
						if job.Spec.CompletionMode != "Indexed" {
							t.Errorf("job %s reads a completion index but is not Indexed", job.Metadata.Name)
						}
						v = string(rune('0' + index))
					default:
						t.Errorf("job %s: %s from unknown field %s", job.Metadata.Name, e.Name, vf.FieldRef.FieldPath)
					}
				case vf != nil && vf.SecretKeyRef != nil:
					s, ok := byKind["Secret"][vf.SecretKeyRef.Name]
					if !ok || s.StringData[vf.SecretKeyRef.Key] == "" {
						t.Errorf("job %s: %s from secret %s key %s, which no manifest defines", job.Metadata.Name, e.Name, vf.SecretKeyRef.Name, vf.SecretKeyRef.Key)
					}
					v = s.StringData[vf.SecretKeyRef.Key]
				}
				// Kubernetes expands $(VAR) of variables defined before.
				p.env[e.Name] = k8sRef.ReplaceAllStringFunc(v, func(m string) string {
					if w, ok := p.env[m[2:len(m)-1]]; ok {
						return w
					}
					t.Errorf("job %s: %s refers to %s, not defined before it", job.Metadata.Name, e.Name, m)
					return m
				})
			}
			pods = append(pods, p)
		}
	}
	roles := map[string]int{}
	for _, p := range pods {
		if len(p.args) == 0 || p.args[0] != "node" {
			t.Fatalf("job %s runs %v, want colo node", p.job, p.args)
		}
		f := newFlags(&env{}, "node", "", "")
		var nf nodeFlags
		nf.register(f)
		if _, err := f.parse(p.args[1:], 0, 0); err != nil {
			t.Fatalf("job %s: args %v: %v", p.job, p.args, err)
		}
		for k := range p.env {
			if name, ok := strings.CutPrefix(k, "COLO_"); ok {
				if f.Lookup(strings.ToLower(strings.ReplaceAll(name, "_", "-"))) == nil {
					t.Errorf("job %s: %s is no flag of colo node", p.job, k)
				}
			} else if !strings.HasPrefix(k, "DMLC_") {
				t.Errorf("job %s: %s is neither COLO_ nor DMLC_", p.job, k)
			}
		}
		getenv := func(k string) string { return p.env[k] }
		if err := launch.FromEnv(f.FlagSet, getenv); err != nil {
			t.Fatalf("job %s: %v", p.job, err)
		}
		if err := nf.cl.Resolve(f.FlagSet, getenv); err != nil {
			t.Fatalf("job %s: %v", p.job, err)
		}
		if nf.token == "" || nf.numServers < 1 || nf.numWorkers < 1 {
			t.Errorf("job %s: token %q, %d servers, %d workers", p.job, nf.token, nf.numServers, nf.numWorkers)
		}
		if nf.tls.Cert == "" || nf.tls.Key == "" || nf.tls.CA == "" {
			t.Errorf("job %s: TLS cert %q, key %q, CA %q: the pods run mutual TLS", p.job, nf.tls.Cert, nf.tls.Key, nf.tls.CA)
		}
		roles[nf.role]++
		svc, ok := byKind["Service"][p.env["DMLC_PS_ROOT_URI"]]
		if !ok {
			t.Fatalf("job %s: DMLC_PS_ROOT_URI %s names no Service", p.job, p.env["DMLC_PS_ROOT_URI"])
		}
		port := p.env["DMLC_PS_ROOT_PORT"]
		switch nf.role {
		case "scheduler":
			if nf.scheduler != ":"+port {
				t.Errorf("the scheduler listens on %q, want every interface's port %s", nf.scheduler, port)
			}
			if !selects(svc.Spec.Selector, byKind["Job"][p.job].Spec.Template.Metadata.Labels) || svc.Spec.Ports[0].Port != atoi(port) {
				t.Errorf("Service %s (selector %v, port %d) does not reach the scheduler pod on %s", svc.Metadata.Name, svc.Spec.Selector, svc.Spec.Ports[0].Port, port)
			}
			if nf.place == "" || nf.data == "" {
				t.Errorf("the scheduler has no placement (%q) or data (%q) to route the keys by", nf.place, nf.data)
			}
		case "machine":
			job := byKind["Job"][p.job]
			if nf.scheduler != svc.Metadata.Name+":"+port || nf.host != podIP || nf.rank < 0 || nf.rank >= nf.numWorkers {
				t.Errorf("machine: scheduler %s, host %s, rank %d of %d", nf.scheduler, nf.host, nf.rank, nf.numWorkers)
			}
			if job.Spec.Completions != nf.numWorkers || job.Spec.Parallelism != nf.numWorkers || nf.numServers != nf.numWorkers {
				t.Errorf("job %s: %d completions, parallelism %d, for %d servers and %d workers", p.job, job.Spec.Completions, job.Spec.Parallelism, nf.numServers, nf.numWorkers)
			}
			headless, ok := byKind["Service"][job.Spec.Template.Spec.Subdomain]
			if !ok || headless.Spec.ClusterIP != "None" || !selects(headless.Spec.Selector, job.Spec.Template.Metadata.Labels) {
				t.Errorf("job %s: subdomain %q is no headless Service of its pods", p.job, job.Spec.Template.Spec.Subdomain)
			}
			if want := "/results/machine-" + string(rune('0'+nf.rank)) + ".json"; nf.result != want {
				t.Errorf("machine %d writes its result to %s, want %s", nf.rank, nf.result, want)
			}
			if nf.job != "train" {
				t.Errorf("machine %d runs --job %s", nf.rank, nf.job)
			}
		default:
			t.Errorf("job %s: role %s", p.job, nf.role)
		}
	}
	if roles["scheduler"] != 1 || roles["machine"] != 4 {
		t.Errorf("roles %v, want a scheduler and 4 machines", roles)
	}
}

func selects(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		n = 10*n + int(c-'0')
	}
	return n
}
