//go:build tools

// The prometheus-operator API types controller-gen reads (scripts/build-k8s.sh generates the
// monitoring.coreos.com CRDs from them); imported here only so go.mod pins their module.
package tools

import _ "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
