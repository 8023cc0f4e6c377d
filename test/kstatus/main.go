// kstatus reads Kubernetes objects as JSON (a kubectl List, an array, or one
// object) on stdin and prints, for each, the status that
// sigs.k8s.io/cli-utils/pkg/kstatus computes for it, as Flux (and kubectl's
// apply --prune, kpt, Config Sync) read it: a JSON array of
// {kind, name, status, message}. The operator's tests run it over the objects
// they fetch with kubectl -o json, so they hear kstatus's verdict itself, not
// a reimplementation of its rules.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8sjson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

type verdict struct {
	Kind    string `json:"kind"`
	Name    string `json:"name"`
	Status  string `json:"status"`
	Message string `json:"message"`
}

func main() {
	if err := run(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "kstatus:", err)
		os.Exit(1)
	}
}

func run(in io.Reader, out io.Writer) error {
	raw, err := io.ReadAll(in)
	if err != nil {
		return err
	}
	objects, err := decode(raw)
	if err != nil {
		return err
	}
	verdicts := []verdict{}
	for _, obj := range objects {
		u := &unstructured.Unstructured{Object: obj}
		res, err := status.Compute(u)
		if err != nil {
			return fmt.Errorf("%s %s: %w", u.GetKind(), u.GetName(), err)
		}
		verdicts = append(verdicts, verdict{Kind: u.GetKind(), Name: u.GetName(), Status: res.Status.String(), Message: res.Message})
	}
	return json.NewEncoder(out).Encode(verdicts)
}

// decode accepts what kubectl get -o json prints: one object, or a List of
// them. apimachinery's decoder keeps whole numbers int64, as unstructured
// objects hold them (generations are read as int64).
func decode(raw []byte) ([]map[string]interface{}, error) {
	var list []map[string]interface{}
	if err := k8sjson.Unmarshal(raw, &list); err == nil {
		return list, nil
	}
	var obj map[string]interface{}
	if err := k8sjson.Unmarshal(raw, &obj); err != nil {
		return nil, fmt.Errorf("stdin is not JSON: %w", err)
	}
	if items, ok := obj["items"].([]interface{}); ok && obj["kind"] == "List" {
		for _, item := range items {
			m, ok := item.(map[string]interface{})
			if !ok {
				return nil, fmt.Errorf("a List item is not an object")
			}
			list = append(list, m)
		}
		return list, nil
	}
	return []map[string]interface{}{obj}, nil
}
