// Package check validates Wayfinder's deployment files offline, without a
// cluster, a registry or a Docker daemon: the Kubernetes manifests in
// deploy/k8s against the OpenAPI schema embedded in client-go plus
// semantic checks, the prometheus-adapter rule, deploy/compose.yaml against
// the Compose specification, and the Dockerfile with BuildKit's parser and
// linter plus assertions about the image. It is its own Go module, so its
// heavy dependencies stay out of the server's go.mod.
//
// Run it with `make deploy-check` (cd deploy/check && go test ./...).
package check
