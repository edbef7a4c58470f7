package raytesting

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// EnvOf is the variable called name in c's env, if any.
func EnvOf(c *corev1.Container, name string) (corev1.EnvVar, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e, true
		}
	}
	return corev1.EnvVar{}, false
}

// EnvValue is the value of c's variable called name; the test fails when
// there is none.
func EnvValue(t *testing.T, c *corev1.Container, name string) string {
	t.Helper()
	e, ok := EnvOf(c, name)
	if !ok {
		t.Fatalf("container %s has no env %s", c.Name, name)
	}
	return e.Value
}
