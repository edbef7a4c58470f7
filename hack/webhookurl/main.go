// Command webhookurl points admission webhook configurations at a webhook
// server running on this machine. It reads YAML (or JSON) documents on
// stdin, keeps only the admissionregistration.k8s.io/v1
// MutatingWebhookConfiguration and ValidatingWebhookConfiguration objects
// (kustomize output also carries Services, Deployments, ...; those are
// dropped), replaces every webhook's clientConfig with
//
//	clientConfig:
//	  url: <--url><the path the clientConfig had>
//	  caBundle: <base64 of --ca-file>
//
// and writes the result to stdout as YAML documents, ready for
// `kubectl apply -f -`. hack/jobset-local.sh uses it to run the JobSet
// controller out of cluster:
//
//	kubectl kustomize "$jobset_dir/config/default" |
//	  go run ./hack/webhookurl --url https://localhost:9445 --ca-file .run/jobset/certs/ca.crt
//
// With --keep-group G (repeatable) only the webhooks whose rules name one of
// the groups are kept, and a configuration left without any is dropped:
// hack/kueue-local.sh keeps Kueue's own and its RayCluster and TrainJob
// webhooks, so Kueue never sits in the path of a Pod. With --crds the
// CustomResourceDefinitions are written too, a conversion webhook's
// clientConfig rewritten the same way. With --require-label GROUP=KEY the
// webhooks of GROUP get an objectSelector requiring the label KEY.
//
// It fails when no webhook configuration was found or a webhook has no path
// to keep, so a changed upstream layout is noticed instead of applied half.
package main

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"slices"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

func main() {
	base := flag.String("url", "", "base URL of the webhook server, e.g. https://localhost:9445 (required)")
	caFile := flag.String("ca-file", "", "PEM file of the CA that signed the webhook server's certificate (required)")
	var o options
	flag.Func("require-label", "GROUP=KEY: the webhooks whose rules name GROUP see only objects that carry the label KEY (an objectSelector; repeatable)", func(v string) error {
		group, key, ok := strings.Cut(v, "=")
		if !ok || key == "" {
			return fmt.Errorf("want GROUP=KEY, got %q", v)
		}
		if o.requireLabel == nil {
			o.requireLabel = map[string]string{}
		}
		o.requireLabel[group] = key
		return nil
	})
	flag.BoolVar(&o.crds, "crds", false, "also write the CustomResourceDefinitions, their conversion webhooks pointed at --url")
	flag.Func("keep-group", "keep only the webhooks whose rules name this API group (repeatable; \"\" is the core group); default: all", func(g string) error {
		o.keepGroups = append(o.keepGroups, g)
		return nil
	})
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: %s --url URL --ca-file FILE < manifests.yaml\n", os.Args[0])
		flag.PrintDefaults()
	}
	flag.Parse()
	if *base == "" || *caFile == "" || flag.NArg() != 0 {
		flag.Usage()
		os.Exit(2)
	}
	ca, err := os.ReadFile(*caFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "webhookurl:", err)
		os.Exit(1)
	}
	o.base, o.ca = *base, ca
	if err := rewrite(os.Stdin, os.Stdout, o); err != nil {
		fmt.Fprintln(os.Stderr, "webhookurl:", err)
		os.Exit(1)
	}
}

var webhookKinds = map[string]bool{
	"MutatingWebhookConfiguration":   true,
	"ValidatingWebhookConfiguration": true,
}

// options say what rewrite writes.
type options struct {
	// base is the webhook server, scheme://host[:port] without a path; ca
	// the PEM CA bundle its certificate is signed by.
	base string
	ca   []byte
	// keepGroups, when set, keep only the webhooks whose rules name one of
	// these API groups; a configuration left with none is dropped. A
	// component with many integrations (Kueue) then only intercepts the
	// kinds it is run for.
	keepGroups []string
	// requireLabel, by API group: the webhooks whose rules name the group
	// get an objectSelector requiring that label key to exist, so Kueue
	// only sees the jobs that name a queue.
	requireLabel map[string]string
	// crds: CustomResourceDefinitions are written too, a conversion
	// webhook's clientConfig rewritten like an admission webhook's.
	crds bool
}

// rewrite copies the webhook configurations in the YAML stream r to w with
// every clientConfig pointed at o.base and trusting o.ca.
func rewrite(r io.Reader, w io.Writer, o options) error {
	base, ca := o.base, o.ca
	u, err := url.Parse(base)
	if err != nil {
		return fmt.Errorf("--url: %w", err)
	}
	if u.Scheme != "https" || u.Host == "" || strings.Trim(u.Path, "/") != "" || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("--url %q: want https://host[:port] without a path", base)
	}
	base = "https://" + u.Host
	if !bytes.Contains(ca, []byte("-----BEGIN CERTIFICATE-----")) {
		return errors.New("--ca-file holds no PEM certificate")
	}
	caBundle := base64.StdEncoding.EncodeToString(ca)

	reader := utilyaml.NewYAMLReader(bufio.NewReader(r))
	found := 0
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("reading input: %w", err)
		}
		var obj map[string]any
		if err := yaml.Unmarshal(doc, &obj); err != nil {
			return fmt.Errorf("parsing document %d: %w", found+1, err)
		}
		if obj == nil { // empty document, e.g. a leading "---"
			continue
		}
		kind, _ := obj["kind"].(string)
		apiVersion, _ := obj["apiVersion"].(string)
		name := objectName(obj)
		clientConfig := func(what string, cc any) (map[string]any, error) {
			path, err := webhookPath(cc)
			if err != nil {
				return nil, fmt.Errorf("%s %s: %s: %w", kind, name, what, err)
			}
			return map[string]any{"url": base + path, "caBundle": caBundle}, nil
		}
		switch {
		case webhookKinds[kind] && apiVersion == "admissionregistration.k8s.io/v1":
			webhooks, _ := obj["webhooks"].([]any)
			var kept []any
			for i, wh := range webhooks {
				hook, ok := wh.(map[string]any)
				if !ok {
					return fmt.Errorf("%s %s: webhooks[%d] is not an object", kind, name, i)
				}
				if len(o.keepGroups) > 0 && !namesGroup(hook, o.keepGroups) {
					continue
				}
				if hook["clientConfig"], err = clientConfig(fmt.Sprintf("webhook %v", hook["name"]), hook["clientConfig"]); err != nil {
					return err
				}
				for group, key := range o.requireLabel {
					if namesGroup(hook, []string{group}) {
						requireLabel(hook, key)
					}
				}
				kept = append(kept, hook)
			}
			if len(kept) == 0 {
				continue
			}
			obj["webhooks"] = kept
		case o.crds && kind == "CustomResourceDefinition" && apiVersion == "apiextensions.k8s.io/v1":
			spec, _ := obj["spec"].(map[string]any)
			conversion, _ := spec["conversion"].(map[string]any)
			if hook, ok := conversion["webhook"].(map[string]any); ok && conversion["strategy"] == "Webhook" {
				if hook["clientConfig"], err = clientConfig("conversion webhook", hook["clientConfig"]); err != nil {
					return err
				}
			}
			out, err := yaml.Marshal(obj)
			if err != nil {
				return err
			}
			if _, err := fmt.Fprintf(w, "---\n%s", out); err != nil {
				return err
			}
			continue
		default:
			continue
		}
		out, err := yaml.Marshal(obj)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "---\n%s", out); err != nil {
			return err
		}
		found++
	}
	if found == 0 {
		return errors.New("no MutatingWebhookConfiguration or ValidatingWebhookConfiguration in the input")
	}
	return nil
}

// namesGroup reports whether one of the webhook's rules names one of
// groups.
func namesGroup(hook map[string]any, groups []string) bool {
	rules, _ := hook["rules"].([]any)
	for _, r := range rules {
		rule, _ := r.(map[string]any)
		apiGroups, _ := rule["apiGroups"].([]any)
		for _, g := range apiGroups {
			if s, ok := g.(string); ok && slices.Contains(groups, s) {
				return true
			}
		}
	}
	return false
}

// requireLabel adds "key Exists" to the webhook's objectSelector. The API
// server matches an update when the old or the new object carries it, so
// adding or removing the label is still seen.
func requireLabel(hook map[string]any, key string) {
	sel, _ := hook["objectSelector"].(map[string]any)
	if sel == nil {
		sel = map[string]any{}
	}
	exprs, _ := sel["matchExpressions"].([]any)
	sel["matchExpressions"] = append(exprs, map[string]any{"key": key, "operator": "Exists"})
	hook["objectSelector"] = sel
}

// webhookPath is the HTTP path a clientConfig calls: service.path, or the
// path of its url.
func webhookPath(cc any) (string, error) {
	m, ok := cc.(map[string]any)
	if !ok {
		return "", errors.New("no clientConfig")
	}
	var path string
	if svc, ok := m["service"].(map[string]any); ok {
		path, _ = svc["path"].(string)
	} else if raw, ok := m["url"].(string); ok {
		u, err := url.Parse(raw)
		if err != nil {
			return "", fmt.Errorf("clientConfig.url: %w", err)
		}
		path = u.Path
	}
	if path == "" || !strings.HasPrefix(path, "/") {
		return "", fmt.Errorf("clientConfig has no absolute path (got %q)", path)
	}
	return path, nil
}

func objectName(obj map[string]any) string {
	md, _ := obj["metadata"].(map[string]any)
	name, _ := md["name"].(string)
	return name
}
